// What a request's spans are: their names, kinds, parents, attributes and status, described from its record
// (request-spans.ts) to an encoding, in the order they ended. The one description both OTLP encodings write.
import { type AttributeValue, SpanKind, type SpanStatus, SpanStatusCode } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import type { RequestSpans } from './request-spans.ts';

/** An attribute key whose values vary: the protobuf encoding keeps the bytes of values it met before in `encoded`. */
export class AttributeKey {
  readonly name: string;
  /** Encoded key-value pairs by value, the encoding's own (OTLP/protobuf: docs/decisions/0021). */
  readonly encoded = new Map<AttributeValue, Uint8Array>();

  constructor(name: string) {
    this.name = name;
  }
}

/** Attributes whose values never vary, in order: the protobuf encoding writes their bytes once (`encoded`). */
export class FixedAttributes {
  readonly pairs: readonly (readonly [string, AttributeValue])[];
  encoded: Uint8Array | undefined;

  constructor(attributes: Readonly<Record<string, AttributeValue>>) {
    this.pairs = Object.entries(attributes);
  }
}

/** Attribute names of the gateway's own facts on its SERVER span (the access log's `operation`, `keyId`, `errorCode`). */
const GATEWAY_ATTRIBUTES = { operation: 'gateway.operation', keyId: 'gateway.key_id', errorCode: 'gateway.error_code' } as const;

/** Attribute names on the stages' spans (`authenticate`, its `redis` lookup, `rate_limit`, its `redis` wait). */
const STAGE_ATTRIBUTES = {
  /** `hit` or `miss`: whether the key cache answered (absent for a store without a cache). */
  keyCache: 'gateway.auth.key_cache',
  /** `ok`, or why the key was refused (`missing`, `unknown`, `revoked`, ...), or `store_unavailable`. */
  authResult: 'gateway.auth.result',
  /** What the store's command did for the gateway (`key_lookup`, `rate_limit_increment`). */
  redisCommand: 'gateway.redis.command',
  /** `allowed`, `limited` or `store_unavailable`. */
  rateLimitDecision: 'gateway.rate_limit.decision',
  /** With `store_unavailable`: what the policy did, `allow` (let through unlimited) or `deny` (503). */
  rateLimitOnStoreError: 'gateway.rate_limit.on_store_error',
} as const;

/** The keys whose values vary, one object each, for the encoding's cache of their bytes. */
const KEYS = {
  method: new AttributeKey(ATTR_HTTP_REQUEST_METHOD),
  scheme: new AttributeKey(ATTR_URL_SCHEME),
  path: new AttributeKey(ATTR_URL_PATH),
  address: new AttributeKey(ATTR_SERVER_ADDRESS),
  port: new AttributeKey(ATTR_SERVER_PORT),
  route: new AttributeKey(ATTR_HTTP_ROUTE),
  status: new AttributeKey(ATTR_HTTP_RESPONSE_STATUS_CODE),
  operation: new AttributeKey(GATEWAY_ATTRIBUTES.operation),
  keyId: new AttributeKey(GATEWAY_ATTRIBUTES.keyId),
  errorCode: new AttributeKey(GATEWAY_ATTRIBUTES.errorCode),
  errorType: new AttributeKey(ATTR_ERROR_TYPE),
  urlFull: new AttributeKey(ATTR_URL_FULL),
  keyCache: new AttributeKey(STAGE_ATTRIBUTES.keyCache),
  authResult: new AttributeKey(STAGE_ATTRIBUTES.authResult),
  decision: new AttributeKey(STAGE_ATTRIBUTES.rateLimitDecision),
  onStoreError: new AttributeKey(STAGE_ATTRIBUTES.rateLimitOnStoreError),
};

/** The `redis` spans' attributes: which command the stage waited for. */
const KEY_LOOKUP = new FixedAttributes({ 'db.system.name': 'redis', [STAGE_ATTRIBUTES.redisCommand]: 'key_lookup' });
const RATE_LIMIT_INCREMENT = new FixedAttributes({ 'db.system.name': 'redis', [STAGE_ATTRIBUTES.redisCommand]: 'rate_limit_increment' });

const UNSET: SpanStatus = { code: SpanStatusCode.UNSET };
const ERROR: SpanStatus = { code: SpanStatusCode.ERROR };
const KEYS_UNCHECKED: SpanStatus = { code: SpanStatusCode.ERROR, message: 'API keys cannot be checked' };
const COUNT_UNAVAILABLE: SpanStatus = { code: SpanStatusCode.ERROR, message: 'the rate-limit store cannot count' };

/** HTTP methods semantic conventions name as they are; any other is `_OTHER` (and the span is named `HTTP`). */
const KNOWN_METHODS: ReadonlySet<string> = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE', 'QUERY']);

/** Where `describeSpans` writes a request's spans: an encoding. Each span is begun, given attributes in order, then ended. */
export interface SpanSink {
  begin(
    request: RequestSpans,
    name: string,
    kind: SpanKind,
    high: number,
    low: number,
    parentHigh: number,
    parentLow: number,
    startMs: number,
    endMs: number,
  ): void;
  fixed(attributes: FixedAttributes): void;
  attribute(key: AttributeKey, value: AttributeValue): void;
  end(status: SpanStatus): void;
}

/** A stage's end, or the request's when the stage was still running as it completed. */
function endOf(stageEndMs: number, request: RequestSpans): number {
  return stageEndMs === 0 ? request.endMs : stageEndMs;
}

/**
 * The request's spans in the order they ended (children first), attributes in the order the stages learnt them. The SERVER span
 * follows HTTP semantic conventions; the CLIENT span is the exchange, an error on a failure or a 4xx/5xx answer.
 */
export function describeSpans(request: RequestSpans, sink: SpanSink): void {
  const { serverHigh, serverLow } = request;
  if (request.authStartMs !== 0) {
    if (request.lookupStartMs !== 0) {
      const { lookupHigh, lookupLow, authHigh, authLow, lookupStartMs, lookupEndMs, lookupErrorType } = request;
      describeRedisWait(sink, request, KEY_LOOKUP, lookupHigh, lookupLow, authHigh, authLow, lookupStartMs, lookupEndMs, lookupErrorType);
    }
    const { authHigh, authLow, authStartMs, authEndMs } = request;
    sink.begin(request, 'authenticate', SpanKind.INTERNAL, authHigh, authLow, serverHigh, serverLow, authStartMs, endOf(authEndMs, request));
    if (request.keyCache !== undefined) sink.attribute(KEYS.keyCache, request.keyCache);
    if (request.authResult !== undefined) sink.attribute(KEYS.authResult, request.authResult);
    sink.end(request.authResult === 'store_unavailable' ? KEYS_UNCHECKED : UNSET);
  }
  if (request.rateLimitStartMs !== 0) {
    const outcome = request.rateLimitOutcome;
    if (request.countStartMs !== 0) {
      const { countHigh, countLow, rateLimitHigh, rateLimitLow, countStartMs, countEndMs, countErrorType } = request;
      describeRedisWait(sink, request, RATE_LIMIT_INCREMENT, countHigh, countLow, rateLimitHigh, rateLimitLow, countStartMs, countEndMs, countErrorType);
    }
    const { rateLimitHigh, rateLimitLow, rateLimitStartMs, rateLimitEndMs } = request;
    sink.begin(request, 'rate_limit', SpanKind.INTERNAL, rateLimitHigh, rateLimitLow, serverHigh, serverLow, rateLimitStartMs, endOf(rateLimitEndMs, request));
    if (outcome !== undefined && outcome !== 'failed') sink.attribute(KEYS.decision, outcome);
    if (request.onStoreError !== undefined) sink.attribute(KEYS.onStoreError, request.onStoreError);
    sink.end(outcome === 'store_unavailable' ? COUNT_UNAVAILABLE : outcome === 'failed' ? ERROR : UNSET);
  }
  if (request.clientStartMs !== 0) describeClient(request, sink);
  describeServer(request, sink);
}

/** A stage's wait for Redis (CLIENT `redis`): its command's attributes, an error when Redis did not answer. */
function describeRedisWait(
  sink: SpanSink,
  request: RequestSpans,
  command: FixedAttributes,
  high: number,
  low: number,
  parentHigh: number,
  parentLow: number,
  startMs: number,
  endMs: number,
  errorType: string | undefined,
): void {
  sink.begin(request, 'redis', SpanKind.CLIENT, high, low, parentHigh, parentLow, startMs, endOf(endMs, request));
  sink.fixed(command);
  if (errorType !== undefined) sink.attribute(KEYS.errorType, errorType);
  sink.end(errorType === undefined ? UNSET : ERROR);
}

function describeClient(request: RequestSpans, sink: SpanSink): void {
  const origin = request.clientOrigin!;
  sink.begin(
    request,
    request.clientMethod,
    SpanKind.CLIENT,
    request.clientHigh,
    request.clientLow,
    request.serverHigh,
    request.serverLow,
    request.clientStartMs,
    endOf(request.clientEndMs, request),
  );
  sink.attribute(KEYS.method, request.clientMethod);
  sink.attribute(KEYS.address, origin.hostname);
  sink.attribute(KEYS.port, origin.port);
  // The origin as URL writes it (no user:password of a configured base), and the path without the query: a
  // client may put a secret there by mistake (the access log leaves it out too).
  sink.attribute(KEYS.urlFull, origin.origin + request.clientPath);
  const { clientStatus: status, clientFailure: failure } = request;
  if (status) sink.attribute(KEYS.status, status);
  if (failure !== undefined) {
    sink.attribute(KEYS.errorType, failure);
    sink.end({ code: SpanStatusCode.ERROR, message: failure });
  } else if (status !== undefined && status >= 400) {
    // A client span's 4xx is an error too (semantic conventions): the gateway's request was refused.
    sink.attribute(KEYS.errorType, String(status));
    sink.end(ERROR);
  } else sink.end(UNSET);
}

function describeServer(request: RequestSpans, sink: SpanSink): void {
  const { arrival, outcome } = request;
  const known = KNOWN_METHODS.has(arrival.method);
  const route = outcome?.route;
  sink.begin(
    request,
    serverName(known ? arrival.method : 'HTTP', route),
    SpanKind.SERVER,
    request.serverHigh,
    request.serverLow,
    request.parentHigh,
    request.parentLow,
    request.startMs,
    request.endMs,
  );
  sink.attribute(KEYS.method, known ? arrival.method : '_OTHER');
  sink.attribute(KEYS.scheme, arrival.scheme);
  sink.attribute(KEYS.path, arrival.path);
  if (arrival.host.host !== undefined) sink.attribute(KEYS.address, arrival.host.host);
  if (arrival.host.port !== undefined) sink.attribute(KEYS.port, arrival.host.port);
  if (outcome === undefined) {
    sink.end(UNSET);
    return;
  }
  if (route !== undefined) sink.attribute(KEYS.route, route);
  sink.attribute(KEYS.status, outcome.statusCode);
  if (outcome.operationId !== undefined) sink.attribute(KEYS.operation, outcome.operationId);
  if (outcome.keyId !== undefined) sink.attribute(KEYS.keyId, outcome.keyId);
  if (outcome.errorCode !== undefined) sink.attribute(KEYS.errorCode, outcome.errorCode);
  // A server span is an error for 5xx only (semantic conventions): a 4xx is the client's, its code says why.
  if (outcome.statusCode >= 500) {
    sink.attribute(KEYS.errorType, String(outcome.statusCode));
    sink.end(outcome.errorCode === undefined ? ERROR : { code: SpanStatusCode.ERROR, message: outcome.errorCode });
  } else sink.end(UNSET);
}

/** `GET /v1/pets`: the method and the route, made once for each pair (routes come from the document). */
const serverNames = new Map<string, Map<string, string>>();

function serverName(method: string, route: string | undefined): string {
  if (route === undefined) return method;
  let byRoute = serverNames.get(method);
  if (byRoute === undefined) {
    byRoute = new Map();
    serverNames.set(method, byRoute);
  }
  let name = byRoute.get(route);
  if (name === undefined) {
    name = `${method} ${route}`;
    // Routes come from the document, methods from the known set or HTTP: few pairs. Bounded all the same.
    if (byRoute.size < 256) byRoute.set(route, name);
  }
  return name;
}

/** Whether semantic conventions name this HTTP method as it is. */
export function isKnownMethod(method: string): boolean {
  return KNOWN_METHODS.has(method);
}
