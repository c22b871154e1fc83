// The proxy stage: forwards a validated request through the circuit breaker and reports how the exchange went.
import type { Request, RequestHandler } from 'express';
import { callerOf, type Consumer } from '../auth/key-store.ts';
import { routeOf, type Operation, type RouteSlice } from '../contract/operations.ts';
import { formatTraceParent, type TraceIds } from '../http/trace-context.ts';
import type { AnswerCheck } from './answer-check.ts';
import type { GuardedExchange } from './circuit-breaker.ts';
import { createUpstream, type ExchangeFacts, type UpstreamOptions, type UpstreamPoolStats, type UpstreamRequest } from './exchange.ts';
import { compileHeaderPolicy, type HeaderListExtensions, type OperationHeaderPolicy } from './header-policy.ts';
import { upstreamHeaders } from './upstream-headers.ts';
import { UpstreamFailure, upstreamFailureError } from './upstream-failure.ts';

export interface ProxyOptions extends UpstreamOptions {
  /** The breaker in front of this upstream (kept across reloads by CircuitBreakers). */
  breaker: GuardedExchange;
  /** Headers asserting who called (a signed token, consumer headers), set on every forwarded request. */
  identityHeaders: (caller: { keyId: string; consumer: string; operationId: string }) => Promise<Readonly<Record<string, string>>>;
  /** The operations this proxy forwards: each one's header policy is compiled here, once. */
  operations: readonly Operation[];
  /** The config's additions to the header allow-lists (config `headers`). */
  headers: HeaderListExtensions;
  /** Whether and how a request's answer is checked against the document (createAnswerChecks). */
  answerCheckFor: (operation: Operation, method: string) => AnswerCheck | undefined;
}

export interface UpstreamProxy {
  handler: RequestHandler;
  /** Closes pooled upstream connections (on shutdown). */
  close(): Promise<void>;
  /** The upstream pool's use now (read at scrape time). */
  stats(): UpstreamPoolStats;
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** What the proxy stage reads of the request record, and the exchange writes. */
interface ForwardedRecord extends ExchangeFacts {
  requestId: string;
  query: string;
  trace: TraceIds;
  route?: RouteSlice;
  caller?: Consumer;
  body?: Buffer;
}

/** The credential of an Authorization value (`Bearer <token>`: the token), which a backend might echo on its own. */
function credentialOf(authorization: string): string | undefined {
  const credential = authorization.slice(authorization.indexOf(' ') + 1).trim();
  return credential === '' ? undefined : credential;
}

/** The path the upstream sees: the operation's template filled with the validated, re-encoded parameters. */
function canonicalPath(route: RouteSlice, query: string): string {
  const path = route.operation.pathTemplate.replace(/\{([^}]+)\}/g, (_all, name: string) => encodeURIComponent(route.pathParams[name] ?? ''));
  return query === '' ? path : `${path}?${query}`;
}

export function createProxy(options: ProxyOptions): UpstreamProxy {
  const upstream = createUpstream(options);
  const guarded = options.breaker;
  const policies = new Map<string, OperationHeaderPolicy>();
  for (const operation of options.operations) policies.set(operation.id, compileHeaderPolicy(operation, options.headers));

  async function describe(req: Request, record: ForwardedRecord): Promise<UpstreamRequest> {
    const route = routeOf(record);
    const caller = callerOf(record);
    const policy = policies.get(route.operation.id);
    if (!policy) throw new Error(`no header policy for ${route.operation.id}: the proxy was built without the operation`);
    const headers = upstreamHeaders(req.headers, policy.forwarded, {
      requestId: record.requestId,
      peer: req.socket.remoteAddress ?? 'unknown',
      proto: 'encrypted' in req.socket && req.socket.encrypted ? 'https' : 'http',
      upstreamHost: upstream.host,
      bodyLength: record.body?.length,
      methodTakesBody: METHODS_WITH_BODY.has(req.method),
      traceState: record.trace.traceState,
    });
    // Mostly a cached token (re-signed in the background before it ages); the client's own never passes.
    const identity = await options.identityHeaders({ keyId: caller.keyId, consumer: caller.name, operationId: route.operation.id });
    Object.assign(headers, identity);
    const secret = identity.authorization === undefined ? undefined : credentialOf(identity.authorization);
    const relay = secret === undefined ? policy.relay : { ...policy.relay, secret };
    return {
      method: req.method,
      path: canonicalPath(route, record.query),
      headers,
      body: record.body,
      relay,
      check: options.answerCheckFor(route.operation, req.method),
    };
  }

  return {
    handler: async function forward(req, res) {
      // The client left while an earlier stage waited: the upstream is not asked, and the breaker learns nothing.
      if (res.destroyed) return;
      const record = res.locals.gateway;
      const request = await describe(req, record);
      // The client may have left while the token was being signed.
      if (res.destroyed) return;
      const { trace } = record;
      request.headers.traceparent = formatTraceParent(trace.traceId, trace.upstreamParentId, trace.sampled);
      try {
        // The exchange writes its facts into the record as it begins (after the identity token, before a
        // connection is waited for: the circuit breaker's refusals make no exchange), and its slice as it
        // settles, before the response's close: the completion hook counts, logs and traces from there.
        await guarded(() => upstream.exchange(request, res, record));
      } catch (error) {
        if (error instanceof UpstreamFailure) throw upstreamFailureError(error.kind, error);
        throw error;
      }
    },
    close: () => upstream.close(),
    stats: () => upstream.stats(),
  };
}
