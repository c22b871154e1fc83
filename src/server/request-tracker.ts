// Every request the server hands over: its record made, admitted or shed, counted in flight, and completed once.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { GatewayError, RETRY_SOON } from '../errors/gateway-error.ts';
import { refuse } from '../errors/send-error.ts';
import { createRecord, type RequestRecord } from '../pipeline/request-record.ts';
import type { Tracing } from '../tracing/tracer.ts';

/** What served a request (a generation of the pipeline), told once its response has closed. */
export interface Serving {
  answered(): void;
}

export interface RequestTrackerOptions {
  /** The pipeline; it finds the record in `res.locals.gateway`, and returns what serves the request. */
  serve(req: IncomingMessage, res: ServerResponse): Serving;
  /** Requests in flight per process; above it, 503 at once, before any Redis or upstream work. */
  maxInFlight: number;
  /** The one completion hook: metrics, the access log, deprecated-call accounting. `shed` requests are counted, not logged. */
  onComplete(req: IncomingMessage, res: ServerResponse, record: RequestRecord, shed: boolean): void;
  /** Told of every shed request. */
  onShed?: () => void;
  /** Sets, on a shed request's 503, the headers the pipeline would have set on any answer (CORS: a page can then read it). */
  shedAnswerHeaders?: (req: IncomingMessage, res: ServerResponse) => void;
  /** Continues or starts each request's trace on arrival. */
  tracing: Tracing;
}

export interface RequestTracker {
  listener: RequestListener;
  /** The process's one count of requests handed to the pipeline whose answer has not ended yet (neither waiting nor shed ones). */
  inFlight(): number;
}

const AT_CAPACITY = new GatewayError('service_unavailable', 'The gateway is at capacity; retry shortly', { headers: RETRY_SOON });

export function createRequestTracker(options: RequestTrackerOptions): RequestTracker {
  const { serve, maxInFlight, onComplete, onShed } = options;
  const startTrace = options.tracing.begin;
  let inFlight = 0;

  return {
    listener(req, res) {
      const record = createRecord(req, startTrace);
      // Express keeps locals it finds; every stage reads and writes this one record.
      (res as ServerResponse & { locals?: { gateway: RequestRecord } }).locals = { gateway: record };
      res.setHeader('X-Request-Id', record.requestId);
      if (inFlight >= maxInFlight) {
        onShed?.();
        record.error = AT_CAPACITY;
        res.once('close', () => onComplete(req, res, record, true));
        options.shedAnswerHeaders?.(req, res);
        refuse(req, res, AT_CAPACITY);
        return;
      }
      inFlight++;
      let landed = false;
      // A whole answer handed to the connection leaves flight: what is left is the connection's to deliver, within
      // listen.sendTimeoutMs (connection-cap.ts), and a client that does not read holds its own connection, not a slot.
      const land = () => {
        if (landed) return;
        landed = true;
        inFlight--;
      };
      res.once('prefinish', land);
      const serving = serve(req, res);
      // The request's one close listener here (a response never closes within `serve`): the process's
      // count if the answer never ended, the generation's own, then completion.
      res.once('close', () => {
        land();
        serving.answered();
        // After every other close listener of this response (the exchange's, which records what the
        // upstream did when the client left): completion reads the whole record.
        queueMicrotask(() => onComplete(req, res, record, false));
      });
    },
    inFlight: () => inFlight,
  };
}
