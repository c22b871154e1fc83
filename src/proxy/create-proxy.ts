// The proxy stage: forwards a validated request through the circuit breaker and reports how the exchange went.
import type { Request, RequestHandler, Response } from 'express';
import { callerOf, type Consumer } from '../auth/key-store.ts';
import { routeOf, type Operation, type RouteSlice } from '../contract/operations.ts';
import { formatTraceParent, type TraceIds } from '../http/trace-context.ts';
import type { AnswerCheck } from './answer-check.ts';
import type { GuardedExchange } from './circuit-breaker.ts';
import type { IdentityCaller } from '../identity/identity-signer.ts';
import { type AnswerTap, createUpstream, type ExchangeFacts, type UpstreamOptions, type UpstreamPoolStats, type UpstreamRequest } from './exchange.ts';
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
  /** Which requests are also sent to staging once answered (src/shadow); absent when nothing is shadowed: no cost per request. */
  shadow?: ShadowSampler | undefined;
}

/** Draws the requests shadowed to staging (config `shadow.sample`). */
export interface ShadowSampler {
  /** This request's ticket when it is shadowed (its tap copies production's answer); undefined for every other. */
  draw(operation: Operation, method: string): ShadowTicket | undefined;
}

/** One shadowed request: its tap holds production's answer until the copy is sent, or dropped. */
export interface ShadowTicket extends AnswerTap {
  /** Production's answer is complete for the client: the copy goes to staging now (in the background; never throws). */
  send(request: ShadowedRequest): void;
  /** Production's exchange failed: there is nothing to compare with. */
  drop(): void;
}

/** The request as production got it, without its identity: the shadow adds staging's, and its mark. */
export interface ShadowedRequest {
  operation: Operation;
  method: string;
  /** Below the base address, with the query. */
  path: string;
  headers: Readonly<Record<string, string | string[] | number | undefined>>;
  body: Buffer | undefined;
  caller: IdentityCaller;
  /** Header names on the client's answer: those production's backend did not send the gateway states itself (X-Request-Id). */
  answeredWith: readonly string[];
}

/** The request for the exchange and, when it is drawn for a shadow, its ticket (also the exchange's tap) and what the copy is sent with. */
type DescribedRequest = UpstreamRequest & { shadow?: { ticket: ShadowTicket; request: Omit<ShadowedRequest, 'answeredWith'> } };

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
  const shadow = options.shadow;
  const policies = new Map<string, OperationHeaderPolicy>();
  for (const operation of options.operations) policies.set(operation.id, compileHeaderPolicy(operation, options.headers));

  async function describe(req: Request, record: ForwardedRecord): Promise<DescribedRequest> {
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
    const identityCaller = { keyId: caller.keyId, consumer: caller.name, operationId: route.operation.id };
    // Mostly a cached token (re-signed in the background before it ages); the client's own never passes.
    const identity = await options.identityHeaders(identityCaller);
    // One branch when nothing is shadowed; a drawn request keeps its headers as they are before production's identity is added.
    const ticket = shadow === undefined ? undefined : shadow.draw(route.operation, req.method);
    const shadowHeaders = ticket === undefined ? undefined : { ...headers };
    Object.assign(headers, identity);
    const secret = identity.authorization === undefined ? undefined : credentialOf(identity.authorization);
    const relay = secret === undefined ? policy.relay : { ...policy.relay, secret };
    const path = canonicalPath(route, record.query);
    const described: DescribedRequest = {
      method: req.method,
      path,
      headers,
      body: record.body,
      relay,
      check: options.answerCheckFor(route.operation, req.method),
    };
    // Set only on a drawn request: the others allocate nothing for the shadow.
    if (ticket !== undefined) {
      described.tap = ticket;
      described.shadow = {
        ticket,
        request: { operation: route.operation, method: req.method, path, headers: shadowHeaders!, body: record.body, caller: identityCaller },
      };
    }
    return described;
  }

  /** Production's answer is complete: the ticket's copy goes to staging (or is dropped when the exchange failed). */
  function shadowAfter(shadowed: NonNullable<DescribedRequest['shadow']>, res: Response, failed: boolean): void {
    if (failed) shadowed.ticket.drop();
    else shadowed.ticket.send({ ...shadowed.request, answeredWith: res.getHeaderNames() });
  }

  return {
    handler: async function forward(req, res) {
      // The client left while an earlier stage waited: the upstream is not asked, and the breaker learns nothing.
      if (res.destroyed) return;
      const record = res.locals.gateway;
      const request = await describe(req, record);
      // The client may have left while the token was being signed.
      if (res.destroyed) {
        request.shadow?.ticket.drop();
        return;
      }
      const { trace } = record;
      request.headers.traceparent = formatTraceParent(trace.traceId, trace.upstreamParentId, trace.sampled);
      const { shadow: shadowed } = request;
      try {
        // The exchange writes its facts into the record as it begins (after the identity token, before a
        // connection is waited for: the circuit breaker's refusals make no exchange), and its slice as it
        // settles, before the response's close: the completion hook counts, logs and traces from there.
        await guarded(() => upstream.exchange(request, res, record));
      } catch (error) {
        if (shadowed !== undefined) shadowAfter(shadowed, res, true);
        if (error instanceof UpstreamFailure) throw upstreamFailureError(error.kind, error);
        throw error;
      }
      // After the client's answer is complete: the shadow never delays it.
      if (shadowed !== undefined) shadowAfter(shadowed, res, false);
    },
    close: () => upstream.close(),
    stats: () => upstream.stats(),
  };
}
