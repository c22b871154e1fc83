// The proxy stage: forwards a validated request through the circuit breaker and reports how the exchange went.
import type { Request, RequestHandler } from 'express';
import type { RequestContext } from '../http/request-context.ts';
import { createCircuitBreaker, type CircuitBreakerOptions } from './circuit-breaker.ts';
import { createUpstream, type UpstreamOptions } from './exchange.ts';
import { upstreamHeaders } from './upstream-headers.ts';
import { classifyUpstreamFailure, UpstreamFailure, upstreamFailureError, type UpstreamFailureKind } from './upstream-failure.ts';

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

  return {
    handler: async function forward(req, res) {
      const context = res.locals.gateway;
      const request = describe(req, context);
      try {
        const outcome = await guarded(() => upstream.exchange(request, res));
        context.upstreamStatus = outcome.status;
        context.upstreamMs = outcome.upstreamMs;
        if (outcome.failure) {
          context.upstreamFailure = outcome.failure;
          options.onFailure?.(outcome.failure, context.operation?.id ?? 'none', new UpstreamFailure(outcome.failure, 'the answer was cut short'));
        }
      } catch (error) {
        if (!(error instanceof UpstreamFailure)) throw error;
        const kind = classifyUpstreamFailure(error);
        context.upstreamFailure = kind;
        options.onFailure?.(kind, context.operation?.id ?? 'none', error);
        throw upstreamFailureError(kind, error);
      }
    },
    close: () => upstream.close(),
  };
}
