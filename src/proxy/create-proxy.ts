// The proxy stage: forwards a validated request through the circuit breaker and reports how the exchange went.
import type { Request, RequestHandler } from 'express';
import type { RequestContext } from '../http/request-context.ts';
import { createCircuitBreaker, type CircuitBreakerOptions } from './circuit-breaker.ts';
import { createUpstream, type ExchangeOutcome, type UpstreamOptions } from './exchange.ts';
import { upstreamHeaders } from './upstream-headers.ts';
import { UpstreamFailure, upstreamFailureError, type UpstreamFailureKind } from './upstream-failure.ts';

export interface ProxyOptions extends UpstreamOptions {
  circuitBreaker: CircuitBreakerOptions;
  /** Told of every failed exchange, for metrics and logs; `error` is the UpstreamFailure (never log its cause's raw bytes). */
  onFailure?: (kind: UpstreamFailureKind, operation: string, error: unknown) => void;
}

export interface Proxy {
  handler: RequestHandler;
  /** Closes pooled upstream connections (on shutdown). */
  close(): void;
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** The path the upstream sees: the operation's template filled with the validated, re-encoded parameters. */
export function canonicalPath(context: RequestContext, url: string): string {
  const { operation, pathParams = {} } = context;
  if (!operation) throw new Error('canonicalPath: the request matched no operation');
  const path = operation.pathTemplate.replace(/\{([^}]+)\}/g, (_all, name: string) => encodeURIComponent(pathParams[name] ?? ''));
  const query = url.indexOf('?');
  return query === -1 ? path : path + url.slice(query);
}

export function createProxy(options: ProxyOptions): Proxy {
  const upstream = createUpstream(options);
  const guarded = createCircuitBreaker(options.circuitBreaker);

  function describe(req: Request, context: RequestContext) {
    return {
      method: req.method,
      path: canonicalPath(context, req.url),
      headers: upstreamHeaders(req.headers, {
        requestId: context.requestId,
        peer: req.socket.remoteAddress ?? 'unknown',
        proto: 'encrypted' in req.socket && req.socket.encrypted ? ('https' as const) : ('http' as const),
        upstreamHost: upstream.host,
        bodyLength: context.rawBody?.length,
        methodTakesBody: METHODS_WITH_BODY.has(req.method),
      }),
      body: context.rawBody,
    };
  }

  /** Runs as the exchange settles, before the response's close: metrics and the access log read what it set. */
  function record(context: RequestContext, ended: ExchangeOutcome | UpstreamFailure): void {
    const operation = context.operation?.id ?? 'none';
    if (ended instanceof UpstreamFailure) {
      context.upstreamFailure = ended.kind;
      options.onFailure?.(ended.kind, operation, ended);
      return;
    }
    context.upstreamStatus = ended.status;
    context.upstreamMs = ended.upstreamMs;
    if (ended.failure) {
      context.upstreamFailure = ended.failure;
      options.onFailure?.(ended.failure, operation, new UpstreamFailure(ended.failure, 'the answer was cut short'));
    }
  }

  return {
    handler: async function forward(req, res) {
      // The client left while an earlier stage waited: the upstream is not asked, and the breaker learns nothing.
      if (res.destroyed) return;
      const context = res.locals.gateway;
      const request = describe(req, context);
      try {
        await guarded(() => upstream.exchange(request, res, (ended) => record(context, ended)));
      } catch (error) {
        if (error instanceof UpstreamFailure) throw upstreamFailureError(error.kind, error);
        throw error;
      }
    },
    close: () => upstream.close(),
  };
}
