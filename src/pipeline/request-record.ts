// The one record a request carries through the gateway: made on arrival, each stage writes its own slice.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthFacts } from '../auth/authenticate.ts';
import type { Consumer } from '../auth/key-store.ts';
import type { RouteSlice } from '../contract/operations.ts';
import type { GatewayError } from '../errors/gateway-error.ts';
import type { RateLimitFacts } from '../limits/rate-limit.ts';
import type { ExchangeFacts } from '../proxy/exchange.ts';
import type { TraceSlice } from '../tracing/tracer.ts';

/** The stages' facts are on the record from its creation, traced or not: tracing, metrics and the access log read them at completion. */
export interface RequestRecord extends AuthFacts, RateLimitFacts, ExchangeFacts {
  readonly requestId: string;
  /** process.hrtime.bigint() on arrival. */
  readonly startedAt: bigint;
  /** The target's path as received (origin form), split from its query once for every stage. */
  readonly path: string;
  /** The query string without its `?`; empty when there is none. */
  readonly query: string;
  /** The request's trace and the gateway's span in it, decided on arrival (src/tracing/tracer.ts). */
  readonly trace: TraceSlice;
  route?: RouteSlice;
  /** A path of the document asked with a method it does not serve: the 405 the match decided, raised after authentication. */
  routeRefusal?: GatewayError;
  /** The authenticated caller. */
  caller?: Consumer;
  /** The request body as received, for operations that take one: validated, then forwarded byte for byte. */
  body?: Buffer;
  /** 100 Continue was sent: the client was invited to send the body it announced. */
  continueSent?: boolean;
  /** Why the request was refused, when it was. */
  error?: GatewayError;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express types its Locals through this global namespace.
  namespace Express {
    interface Locals {
      gateway: RequestRecord;
    }
  }
}

/** Printable, no spaces or separators a log or header parser could trip on; long enough for any tracing scheme. */
const WELL_FORMED_ID = /^[A-Za-z0-9._:-]{8,128}$/;

export const REQUEST_ID_HEADER = 'x-request-id';

/** The caller's X-Request-Id when it is well-formed, a new UUID otherwise (the admin listener's requests too). */
export function requestIdOf(offered: string | string[] | undefined): string {
  return typeof offered === 'string' && WELL_FORMED_ID.test(offered) ? offered : randomUUID();
}

/** The request's id (requestIdOf); `startTrace` continues or starts its trace. */
export function createRecord(req: IncomingMessage, startTrace: (req: IncomingMessage, path: string) => TraceSlice): RequestRecord {
  const offered = req.headers[REQUEST_ID_HEADER];
  const url = req.url ?? '/';
  const questionMark = url.indexOf('?');
  const path = questionMark === -1 ? url : url.slice(0, questionMark);
  return {
    requestId: requestIdOf(offered),
    startedAt: process.hrtime.bigint(),
    path,
    query: questionMark === -1 ? '' : url.slice(questionMark + 1),
    trace: startTrace(req, path),
    // Every stage's facts from the start, in one shape: no stage adds a property as it runs.
    authStartMs: 0,
    authEndMs: 0,
    keyCache: undefined,
    lookupStartMs: 0,
    lookupEndMs: 0,
    lookupError: undefined,
    authResult: undefined,
    rateLimitStartMs: 0,
    rateLimitEndMs: 0,
    rateLimitOutcome: undefined,
    rateLimitWaitedForRedis: false,
    rateLimitStoreError: undefined,
    onStoreError: undefined,
    quota: undefined,
    exchangeStartMs: 0,
    exchangeEndMs: 0,
    exchangeMethod: '',
    exchangeOrigin: undefined,
    exchangePath: '',
  };
}

/** The status a finished request is counted with: the one sent; 499 (as nginx) when the client left; 502 when an upstream failure cut it. */
export function completedStatus(res: ServerResponse, record: RequestRecord): number {
  if (res.writableFinished) return res.statusCode;
  return record.upstream?.failure ? 502 : 499;
}
