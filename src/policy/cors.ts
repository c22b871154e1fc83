// CORS: which other origins' pages may call the API, the headers that tell their browsers so, and the preflights the gateway answers itself.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { GatewayConfig } from '../config/schema.ts';
import type { Contract } from '../contract/compile-contract.ts';
import { allowedMethods } from '../contract/match-operation.ts';
import type { Operation } from '../contract/operations.ts';
import { isSafePath } from '../contract/safe-path.ts';
import { originProblem, withVary } from '../http/cors-vocabulary.ts';

/**
 * How long a browser may reuse a preflight's answer. Short enough that an origin removed by a reload is
 * soon asked about again (its actual answers lose Access-Control-Allow-Origin at once); Chromium caps it at 7200.
 */
export const PREFLIGHT_MAX_AGE_SECONDS = 600;

/** Response headers the gateway states that scripts read: quotas, deprecation, the request id for support, where to go next. */
export const GATEWAY_EXPOSED: readonly string[] = [
  'X-Request-Id',
  'RateLimit',
  'RateLimit-Policy',
  // Written only where an operator turned on rateLimit.legacyHeaders; readable wherever they are.
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'Deprecation',
  'Sunset',
  'Link',
  'API-Stability',
  'Allow',
  'WWW-Authenticate',
];

/** Request headers every operation accepts from a script: the key, the body's type, the request id and trace context the gateway reads. */
export const GATEWAY_ACCEPTED: readonly string[] = ['authorization', 'content-type', 'x-request-id', 'traceparent', 'tracestate', 'baggage'];

/** Response headers every script may read without being told (Fetch, "CORS-safelisted response-header name"). */
const SAFELISTED_RESPONSE = new Set(['cache-control', 'content-language', 'content-length', 'content-type', 'expires', 'last-modified', 'pragma']);
/** Request headers a script sends without a preflight (accept...) or cannot send at all (accept-encoding): no need to allow them. */
const NEEDS_NO_ALLOWING = new Set(['accept', 'accept-language', 'content-language', 'accept-encoding']);

/** One allowed origin's Access-Control-Allow-Origin value: the origin itself, or `*` for every origin. */
export type OriginPolicy = (origin: string | undefined) => string | undefined;

/**
 * Compiles `allowedOrigins` (origins as browsers send them, or `*` alone); throws naming the first one
 * that is not. No Access-Control-Allow-Credentials is ever sent: the API's credential is a key the
 * script puts in Authorization itself, which Access-Control-Allow-Headers allows. Credentials in the
 * CORS sense are what the browser adds unasked (cookies, HTTP authentication, client certificates); the
 * gateway uses none, and allowing them would let an allowed site's page act with whatever a user's
 * browser holds for the gateway's host.
 */
export function compileOriginPolicy(allowedOrigins: readonly string[]): OriginPolicy {
  if (allowedOrigins.includes('*')) {
    if (allowedOrigins.length > 1) throw new Error("CORS: '*' allows every origin: list it alone or not at all");
    return () => '*';
  }
  for (const origin of allowedOrigins) {
    const problem = originProblem(origin);
    if (problem !== undefined) throw new Error(`CORS: ${origin} ${problem}`);
  }
  const allowed = new Set(allowedOrigins);
  return (origin) => (origin !== undefined && allowed.has(origin) ? origin : undefined);
}

/** Names once each, whatever their case, the first spelling kept, less those `leaveOut` (lower case) holds. */
export function headerList(names: readonly string[], leaveOut: ReadonlySet<string>): string {
  const seen = new Set<string>();
  const kept: string[] = [];
  for (const name of names) {
    const lower = name.toLowerCase();
    if (seen.has(lower) || leaveOut.has(lower)) continue;
    seen.add(lower);
    kept.push(name);
  }
  return kept.join(', ');
}

/** A CORS preflight (Fetch, "CORS-preflight request"): OPTIONS with Origin and Access-Control-Request-Method. */
export function isPreflight(method: string, headers: IncomingHttpHeaders): boolean {
  return method === 'OPTIONS' && headers.origin !== undefined && headers['access-control-request-method'] !== undefined;
}

/** The response headers a document declares, any operation and status: scripts may read them. */
export function declaredResponseHeaders(contract: Contract): string[] {
  return contract.operations.flatMap((operation) => [...operation.responseHeaders.values()].flat());
}

export interface CorsHeadersOptions {
  allowedOrigins: readonly string[];
  /** Response headers scripts may read besides GATEWAY_EXPOSED: the documents' declared ones, `headers.relayToClient`. */
  exposedHeaders?: readonly string[];
}

/** Sets the CORS headers of one answer; also run on answers given before the pipeline (the listener's load shedding). */
export type AnnounceCors = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Tells the browser, on every answer, refusals included (a page that cannot read a 401's Error body
 * cannot say why it failed), whether a page of the request's Origin may read it. The answer depends on
 * Origin, so it says `Vary: Origin`, unless every origin is allowed.
 */
export function compileCorsHeaders({ allowedOrigins, exposedHeaders = [] }: CorsHeadersOptions): AnnounceCors {
  const allowOriginFor = compileOriginPolicy(allowedOrigins);
  const everyOrigin = allowedOrigins.includes('*');
  const exposed = headerList([...GATEWAY_EXPOSED, ...exposedHeaders], SAFELISTED_RESPONSE);
  return function announceCors(req, res) {
    if (!everyOrigin) {
      // On the request path nothing has set Vary yet: the merge is for the answers given before it.
      const vary = res.getHeader('vary');
      res.setHeader('Vary', vary === undefined ? 'Origin' : withVary(vary, 'Origin'));
    }
    const allowOrigin = allowOriginFor(req.headers.origin);
    if (allowOrigin !== undefined) {
      res.setHeader('Access-Control-Allow-Origin', allowOrigin);
      res.setHeader('Access-Control-Expose-Headers', exposed);
    }
  };
}

/** The pipeline's first stage when CORS is on: `announce` (compileCorsHeaders) on every answer. */
export function createCorsHeaders(announce: AnnounceCors): RequestHandler {
  return function announceCors(req, res, next) {
    announce(req, res);
    next();
  };
}

/** A configuration's CORS, compiled once for a pipeline generation: its app's stages and the answers given before it share it. */
export interface CompiledCors {
  allowedOrigins: readonly string[];
  announce: AnnounceCors;
}

/**
 * A configuration's CORS from its environment's origins and what scripts may read (the documents' declared
 * headers, `headers.relayToClient`); undefined when CORS is off there.
 */
export function compileCors(config: GatewayConfig, contracts: readonly Contract[]): CompiledCors | undefined {
  const allowedOrigins = config.cors.allowedOrigins[config.environment];
  if (allowedOrigins.length === 0) return undefined;
  const exposedHeaders = [...contracts.flatMap(declaredResponseHeaders), ...config.headers.relayToClient];
  return { allowedOrigins, announce: compileCorsHeaders({ allowedOrigins, exposedHeaders }) };
}

export interface PreflightOptions {
  allowedOrigins: readonly string[];
  /** A version's document; or the operations outside every base path, matched on their whole path (base path empty). */
  contract: Pick<Contract, 'basePath' | 'operations' | 'matchPath'>;
  /** Request headers scripts may send besides GATEWAY_ACCEPTED and each path's declared ones: those forwarded to the upstream. */
  acceptedHeaders?: readonly string[];
}

interface PreflightAnswer {
  methods: readonly string[];
  allowMethods: string;
  allowHeaders: string;
}

function answerFor(byMethod: ReadonlyMap<string, Operation>, accepted: readonly string[]): PreflightAnswer {
  const methods = allowedMethods(byMethod);
  const declared = [...byMethod.values()].flatMap((operation) => operation.requestHeaders);
  return { methods, allowMethods: methods.join(', '), allowHeaders: headerList([...GATEWAY_ACCEPTED, ...declared, ...accepted], NEEDS_NO_ALLOWING) };
}

/**
 * Answers a browser's preflight for an operation of the document from an allowed origin: 204, what the
 * path allows, never the upstream, and before authentication, since a preflight never carries the key.
 * Any other OPTIONS (a disallowed origin, a path or method the document lacks) goes on as every request
 * does, to the refusal it would get anyway, without CORS headers for a disallowed origin.
 */
export function createPreflight({ allowedOrigins, contract, acceptedHeaders = [] }: PreflightOptions): RequestHandler {
  const allowOriginFor = compileOriginPolicy(allowedOrigins);
  const byTemplate = new Map<string, Map<string, Operation>>();
  for (const operation of contract.operations) {
    const byMethod = byTemplate.get(operation.pathTemplate) ?? new Map<string, Operation>();
    byTemplate.set(operation.pathTemplate, byMethod.set(operation.method, operation));
  }
  const answers = new Map([...byTemplate].map(([template, byMethod]) => [template, answerFor(byMethod, acceptedHeaders)]));
  return function answerPreflight(req, res, next) {
    if (!isPreflight(req.method, req.headers)) return next();
    const allowOrigin = allowOriginFor(req.headers.origin);
    const path = res.locals.gateway.path.slice(contract.basePath.length);
    const match = allowOrigin !== undefined && isSafePath(path) ? contract.matchPath(path) : undefined;
    const template = match?.kind === 'path' ? match.byMethod.values().next().value?.pathTemplate : undefined;
    const answer = template === undefined ? undefined : answers.get(template);
    if (allowOrigin === undefined || answer === undefined || !answer.methods.includes(String(req.headers['access-control-request-method']))) return next();
    res.statusCode = 204;
    res.setHeader('Access-Control-Allow-Origin', allowOrigin);
    res.setHeader('Access-Control-Allow-Methods', answer.allowMethods);
    res.setHeader('Access-Control-Allow-Headers', answer.allowHeaders);
    res.setHeader('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_SECONDS));
    // Vary: Origin is the header stage's, which runs first whenever CORS is on (src/app.ts).
    res.end();
  };
}
