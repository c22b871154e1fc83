// The gateway's part in a trace: its span for each request and for the upstream exchange, recorded or only propagated.
import type { IncomingMessage } from 'node:http';
import { type Attributes, type Link, ROOT_CONTEXT, SamplingDecision, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { RandomIdGenerator, type Sampler } from '@opentelemetry/sdk-trace';
import { ATTR_HTTP_REQUEST_METHOD, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT, ATTR_URL_PATH, ATTR_URL_SCHEME } from '@opentelemetry/semantic-conventions';
import { remoteParent, type TraceIds } from '../http/trace-context.ts';
import { monotonicMs } from '../time/monotonic.ts';
import {
  type HostAttributes,
  newSpanIdWords,
  newTraceId,
  type RequestOutcome,
  RequestSpans,
  type SpanStart,
  type StageFacts,
  spanIdHex,
  spanIdWords,
  traceIdOf,
  wallOffsetMs,
} from './request-spans.ts';
import { isKnownMethod } from './span-description.ts';

/**
 * The trace slice of a request's record, written on arrival. `spanId` is the SERVER span, the access log's `span_id`;
 * `upstreamParentId` the CLIENT span when recorded, the SERVER span when only propagated, a span id of the gateway's when unsampled.
 */
export interface TraceSlice extends TraceIds {
  readonly spanId: string;
  /** What the request's spans are built from as it completes, when they are recorded and exported (an exporter is configured and the request sampled). */
  readonly spans: SpanStart | undefined;
}

/** What tracing reads of a completed request's record: its trace slice and the stages' facts. */
export interface TracedRecord extends StageFacts {
  readonly trace: TraceSlice;
}

export interface Tracing {
  /** On arrival: the request's trace, continued from a valid `traceparent` or new, and the gateway's span in it. */
  begin(req: IncomingMessage, path: string): TraceSlice;
  /** On completion: the request's spans are built from its record, and go to the export. */
  end(record: TracedRecord, outcome: RequestOutcome): void;
  /** Sends what is queued (on shutdown, after the last request completed). */
  shutdown(): Promise<void>;
  /** Spans recorded but never delivered (a full queue, a failed export): counted since start. */
  droppedSpans(): number;
}

const ids = new RandomIdGenerator();

/** The SERVER span's links, for the sampler: it has none. */
const NO_LINKS: Link[] = [];

/** No exporter: no span recorded, but the trace continued (or begun, unsampled) with a span id the access log and upstream share. */
export function propagationOnly(): Tracing {
  return {
    begin(req) {
      const parent = remoteParent(req.headers);
      const spanId = ids.generateSpanId();
      if (parent === undefined)
        return { traceId: ids.generateTraceId(), spanId, upstreamParentId: spanId, sampled: false, traceState: undefined, spans: undefined };
      return { traceId: parent.traceId, spanId, upstreamParentId: spanId, sampled: parent.sampled, traceState: parent.traceState, spans: undefined };
    },
    end: () => undefined,
    shutdown: () => Promise.resolve(),
    droppedSpans: () => 0,
  };
}

/** What takes a completed request's spans: the span batch. */
export interface CompletedSpans {
  onEnd(request: RequestSpans): void;
}

/**
 * Spans of each sampled request, handed to `completed` as it completes. The sampler decides for the SERVER span as the SDK's tracer
 * asks it; the other spans follow without asking, as every OTEL_TRACES_SAMPLER sampler would answer (none of the six adds
 * attributes: test/unit/tracing/request-spans.test.ts). Recorded but unsampled is nothing to export, so nothing is recorded.
 */
export function recordingTracing(sampler: Sampler, completed: CompletedSpans, delivery: Pick<Tracing, 'shutdown' | 'droppedSpans'>): Tracing {
  return {
    begin(req, path) {
      const parent = remoteParent(req.headers);
      const context =
        parent === undefined
          ? ROOT_CONTEXT
          : trace.setSpanContext(ROOT_CONTEXT, {
              traceId: parent.traceId,
              spanId: parent.spanId,
              traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
              isRemote: true,
              ...(parent.traceState === undefined ? {} : { traceState: new TraceState(parent.traceState) }),
            });
      const traceId = parent === undefined ? newTraceId() : traceIdOf(parent.traceId);
      const method = req.method ?? 'GET';
      const known = isKnownMethod(method);
      const scheme = 'encrypted' in req.socket && req.socket.encrypted ? 'https' : 'http';
      const host = hostOf(req.headers.host);
      // The SERVER span's attributes on arrival, as a sampler is given them.
      const attributes: Attributes = { [ATTR_HTTP_REQUEST_METHOD]: known ? method : '_OTHER', [ATTR_URL_SCHEME]: scheme, [ATTR_URL_PATH]: path };
      if (host.host !== undefined) attributes[ATTR_SERVER_ADDRESS] = host.host;
      if (host.port !== undefined) attributes[ATTR_SERVER_PORT] = host.port;
      const sampling = sampler.shouldSample(context, traceId.hex, known ? method : 'HTTP', SpanKind.SERVER, attributes, NO_LINKS);
      if (sampling.decision !== SamplingDecision.RECORD_AND_SAMPLED) {
        // Not recorded; the upstream's parent is a span id of the gateway's all the same.
        const spanId = ids.generateSpanId();
        return { traceId: traceId.hex, spanId, upstreamParentId: ids.generateSpanId(), sampled: false, traceState: parent?.traceState, spans: undefined };
      }
      const [serverHigh, serverLow] = newSpanIdWords();
      const [clientHigh, clientLow] = newSpanIdWords();
      const spans: SpanStart = {
        trace: {
          traceId,
          remoteParent: parent === undefined ? undefined : spanIdWords(parent.spanId),
          traceFlags: TraceFlags.SAMPLED,
          traceState: sampling.traceState?.serialize() ?? parent?.traceState,
        },
        arrival: { method, scheme, path, host },
        serverHigh,
        serverLow,
        clientHigh,
        clientLow,
        startMs: monotonicMs(),
      };
      const spanId = spanIdHex(serverHigh, serverLow);
      return { traceId: traceId.hex, spanId, upstreamParentId: spanIdHex(clientHigh, clientLow), sampled: true, traceState: parent?.traceState, spans };
    },
    end(record, outcome) {
      const start = record.trace.spans;
      if (start === undefined) return;
      const endMs = monotonicMs();
      completed.onEnd(new RequestSpans(start, record, outcome, endMs, wallOffsetMs(endMs)));
    },
    shutdown: delivery.shutdown,
    droppedSpans: delivery.droppedSpans,
  };
}

/** The Host header's name and port (`server.address`, `server.port`). */
function hostOf(header: string | undefined): HostAttributes {
  if (header === undefined || header === '') return {};
  // Clients of one gateway name it the same way: the last header's answer is kept (one entry, so a client
  // that varies it costs the parse, not memory).
  if (header === lastHost.header) return lastHost.parsed;
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(header);
  const parsed = match === null ? {} : match[2] === undefined ? { host: match[1]! } : { host: match[1]!, port: Number(match[2]) };
  lastHost = { header, parsed };
  return parsed;
}

let lastHost: { header: string; parsed: HostAttributes } = { header: '', parsed: {} };
