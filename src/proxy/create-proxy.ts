// The proxy stage: forwards a validated request through the circuit breaker and reports how the exchange went.
import type { Request, RequestHandler } from 'express';
import { callerOf, type Consumer } from '../auth/key-store.ts';
import { routeOf, type RouteSlice } from '../contract/operations.ts';
import { createCircuitBreaker, type CircuitBreakerOptions } from './circuit-breaker.ts';
import { createUpstream, type ExchangeOutcome, type UpstreamOptions, type UpstreamRequest, type UpstreamSlice } from './exchange.ts';
import { upstreamHeaders } from './upstream-headers.ts';
import { UpstreamFailure, upstreamFailureError, type UpstreamFailureKind } from './upstream-failure.ts';

export interface ProxyOptions extends UpstreamOptions {
  circuitBreaker: CircuitBreakerOptions;
  /** Headers asserting who called (a signed token, consumer headers), set on every forwarded request. */
  identityHeaders: (caller: { keyId: string; consumer: string; operationId: string }) => Promise<Readonly<Record<string, string>>>;
  /** Told of every failed exchange, for metrics and logs; `error` is the UpstreamFailure (never log its cause's raw bytes). */
  onFailure?: (kind: UpstreamFailureKind, operation: string, error: unknown) => void;
}

export interface Proxy {
  handler: RequestHandler;
  /** Closes pooled upstream connections (on shutdown). */
  close(): Promise<void>;
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** What the proxy stage reads of the request record. */
interface ForwardedRecord {
  requestId: string;
  query: string;
  route?: RouteSlice;
  caller?: Consumer;
  body?: Buffer;
  upstream?: UpstreamSlice;
}

/** The path the upstream sees: the operation's template filled with the validated, re-encoded parameters. */
export function canonicalPath(route: RouteSlice, query: string): string {
  const path = route.operation.pathTemplate.replace(/\{([^}]+)\}/g, (_all, name: string) => encodeURIComponent(route.pathParams[name] ?? ''));
  return query === '' ? path : `${path}?${query}`;
}

export function createProxy(options: ProxyOptions): Proxy {
  const upstream = createUpstream(options);
  const guarded = createCircuitBreaker(options.circuitBreaker);

  async function describe(req: Request, record: ForwardedRecord): Promise<UpstreamRequest> {
    const route = routeOf(record);
    const caller = callerOf(record);
    const headers = upstreamHeaders(req.headers, {
      requestId: record.requestId,
      peer: req.socket.remoteAddress ?? 'unknown',
      proto: 'encrypted' in req.socket && req.socket.encrypted ? 'https' : 'http',
      upstreamHost: upstream.host,
      bodyLength: record.body?.length,
      methodTakesBody: METHODS_WITH_BODY.has(req.method),
    });
    // Mostly a cached token (re-signed in the background before it ages); the client's own never passes.
    Object.assign(headers, await options.identityHeaders({ keyId: caller.keyId, consumer: caller.name, operationId: route.operation.id }));
    return { method: req.method, path: canonicalPath(route, record.query), headers, body: record.body };
  }

  /** Runs as the exchange settles, before the response's close: metrics and the access log read what it wrote. */
  function settle(record: ForwardedRecord, ended: ExchangeOutcome | UpstreamFailure): void {
    const operation = record.route?.operation.id ?? 'none';
    if (ended instanceof UpstreamFailure) {
      record.upstream = { failure: ended.kind };
      options.onFailure?.(ended.kind, operation, ended);
      return;
    }
    record.upstream = { status: ended.status, ms: ended.upstreamMs, ...(ended.failure ? { failure: ended.failure } : {}) };
    if (ended.failure) options.onFailure?.(ended.failure, operation, new UpstreamFailure(ended.failure, 'the answer was cut short'));
  }

  return {
    handler: async function forward(req, res) {
      // The client left while an earlier stage waited: the upstream is not asked, and the breaker learns nothing.
      if (res.destroyed) return;
      const record = res.locals.gateway;
      const request = await describe(req, record);
      // The client may have left while the token was being signed.
      if (res.destroyed) return;
      try {
        await guarded(() => upstream.exchange(request, res, (ended) => settle(record, ended)));
      } catch (error) {
        if (error instanceof UpstreamFailure) throw upstreamFailureError(error.kind, error);
        throw error;
      }
    },
    close: () => upstream.close(),
  };
}
