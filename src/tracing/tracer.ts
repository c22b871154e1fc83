// The gateway's part in a trace: its span for each request and for the upstream exchange, recorded or only propagated.
import type { IncomingMessage } from 'node:http';
import { type Attributes, INVALID_SPAN_CONTEXT, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { RandomIdGenerator } from '@opentelemetry/sdk-trace';
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
import { LeanSpan, type LeanTracer } from './lean-tracer.ts';
import { formatTraceParent, remoteParent } from './trace-context.ts';

/** The trace slice of a request's record: written on arrival, read by the proxy stage and the completion hook. */
export interface TraceSlice {
  readonly traceId: string;
  /** The gateway's span for the request (the SERVER span): the access log's `span_id`. */
  readonly spanId: string;
  readonly sampled: boolean;
  /** The client's `tracestate`, checked, passed on to the upstream; undefined when there is none (or a new trace began). */
  readonly traceState: string | undefined;
  /** The SERVER span, when spans are recorded (an exporter is configured); the completion hook ends it. */
  readonly span: Span | undefined;
  /** What makes the SERVER span's children (startChildSpan); present with `span`. */
  readonly tracer?: LeanTracer;
}

/** Not recorded, for a slice without a tracer (never met when `span` is defined). */
const NO_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * A child of the request's SERVER span (or of `parent`, itself one), for a stage's own work: INTERNAL unless
 * told. Call it only once `slice.span` is defined, so that a request whose spans are not recorded pays nothing.
 */
export function startChildSpan(slice: TraceSlice, name: string, attributes?: Attributes, kind: SpanKind = SpanKind.INTERNAL, parent = slice.span): Span {
  // A parent not recorded (not sampled) has no recorded children: every sampler the gateway takes says so.
  if (slice.tracer === undefined || !(parent instanceof LeanSpan)) return NO_SPAN;
  return slice.tracer.startChild(parent, name, kind, attributes);
}

/** What the completion hook knows of a finished request, for its span. */
export interface RequestOutcome {
  statusCode: number;
  /** The operation's route, with the base path (`/v1/pets/{petId}`), once the request matched one. */
  route: string | undefined;
  operationId: string | undefined;
  /** The caller's key id (never the key). */
  keyId: string | undefined;
  /** The Error body's code of a refusal. */
  errorCode: string | undefined;
}

/** The upstream exchange as a span: a child of the request's, the parent the upstream's `traceparent` names. */
export interface ExchangeSpan {
  readonly traceparent: string;
  /** Ends the span with how the exchange went (idempotent): the upstream's status, or why it failed. */
  end(outcome: { status?: number | undefined; failure?: string | undefined } | undefined): void;
}

export interface Tracing {
  /** Whether spans are recorded and exported; false: trace context is only propagated. */
  readonly recording: boolean;
  /** On arrival: the request's trace, continued from a valid `traceparent` or new, and the gateway's span in it. */
  begin(req: IncomingMessage, path: string): TraceSlice;
  /** Just before the request is sent upstream. */
  startExchange(slice: TraceSlice, method: string, url: string): ExchangeSpan;
  /** On completion: the SERVER span ends, named by its route. */
  end(slice: TraceSlice, method: string, outcome: RequestOutcome): void;
  /** Sends what is queued (on shutdown, after the last request completed). */
  shutdown(): Promise<void>;
  /** Spans recorded but never delivered (a full queue, a failed export): counted since start. */
  droppedSpans(): number;
}

const ids = new RandomIdGenerator();

const NOT_RECORDED: ExchangeSpan['end'] = () => undefined;

/**
 * No exporter: no SDK span is made. The gateway still takes part in the trace: it continues the client's
 * (or starts one, not sampled: nothing records it here), and names a span id of its own, which the access
 * log and the upstream's `traceparent` share, so a backend's log line joins the gateway's by it.
 */
export function propagationOnly(): Tracing {
  return {
    recording: false,
    begin(req) {
      const parent = remoteParent(req.headers);
      const spanId = ids.generateSpanId();
      if (parent === undefined) return { traceId: ids.generateTraceId(), spanId, sampled: false, traceState: undefined, span: undefined };
      return { traceId: parent.traceId, spanId, sampled: parent.sampled, traceState: parent.traceState, span: undefined };
    },
    startExchange: (slice) => ({ traceparent: formatTraceParent(slice.traceId, slice.spanId, slice.sampled), end: NOT_RECORDED }),
    end: () => undefined,
    shutdown: () => Promise.resolve(),
    droppedSpans: () => 0,
  };
}

/** HTTP methods semantic conventions name as they are; any other is `_OTHER` (and the span is named `HTTP`). */
const KNOWN_METHODS: ReadonlySet<string> = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE', 'QUERY']);

/** Attribute names of the gateway's own facts on its SERVER span (the access log's `operation`, `keyId`, `errorCode`). */
export const GATEWAY_ATTRIBUTES = { operation: 'gateway.operation', keyId: 'gateway.key_id', errorCode: 'gateway.error_code' } as const;

/** Attribute names on the stages' child spans (`authenticate`, its `redis` lookup, `rate_limit`). */
export const STAGE_ATTRIBUTES = {
  /** `hit` or `miss`: whether the key cache answered (absent for a store without a cache). */
  keyCache: 'gateway.auth.key_cache',
  /** `ok`, or why the key was refused (`missing`, `unknown`, `revoked`, ...), or `store_unavailable`. */
  authResult: 'gateway.auth.result',
  /** What the store's command did for the gateway (`key_lookup`). */
  redisCommand: 'gateway.redis.command',
  /** `allowed`, `limited` or `store_unavailable`. */
  rateLimitDecision: 'gateway.rate_limit.decision',
  /** With `store_unavailable`: what the policy did, `allow` (let through unlimited) or `deny` (503). */
  rateLimitOnStoreError: 'gateway.rate_limit.on_store_error',
} as const;

/** Spans recorded with `tracer`, which hands them to what exports them; `shutdown` sends what is queued. */
export function recordingTracing(tracer: LeanTracer, delivery: Pick<Tracing, 'shutdown' | 'droppedSpans'>): Tracing {
  const upstreamOrigin = upstreamOrigins();
  return {
    recording: true,
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
      const method = req.method ?? 'GET';
      const known = KNOWN_METHODS.has(method);
      const attributes: Attributes = {
        [ATTR_HTTP_REQUEST_METHOD]: known ? method : '_OTHER',
        [ATTR_URL_SCHEME]: 'encrypted' in req.socket && req.socket.encrypted ? 'https' : 'http',
        [ATTR_URL_PATH]: path,
      };
      const { host, port } = hostOf(req.headers.host);
      if (host !== undefined) attributes[ATTR_SERVER_ADDRESS] = host;
      if (port !== undefined) attributes[ATTR_SERVER_PORT] = port;
      const span = tracer.startSpan(known ? method : 'HTTP', { kind: SpanKind.SERVER, attributes }, context);
      const own = span.spanContext();
      return {
        traceId: own.traceId,
        spanId: own.spanId,
        sampled: (own.traceFlags & TraceFlags.SAMPLED) !== 0,
        traceState: parent?.traceState,
        span,
        tracer,
      };
    },
    startExchange(slice, method, url) {
      const target = upstreamOrigin(url);
      const query = url.indexOf('?');
      const attributes: Attributes = {
        [ATTR_HTTP_REQUEST_METHOD]: method,
        [ATTR_SERVER_ADDRESS]: target.hostname,
        [ATTR_SERVER_PORT]: target.port,
        // The origin as URL writes it (no user:password of a configured base), and the path without the
        // query: a client may put a secret there by mistake (the access log leaves it out too).
        [ATTR_URL_FULL]: target.origin + (query === -1 ? url.slice(target.originLength) : url.slice(target.originLength, query)),
      };
      // A request not recorded still names a span of the gateway's as the upstream's parent (not recorded either).
      const span =
        slice.span instanceof LeanSpan
          ? tracer.startChild(slice.span, method, SpanKind.CLIENT, attributes)
          : tracer.startSpan(method, { kind: SpanKind.CLIENT, attributes }, slice.span === undefined ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, slice.span));
      const own = span.spanContext();
      let ended = false;
      return {
        traceparent: formatTraceParent(own.traceId, own.spanId, (own.traceFlags & TraceFlags.SAMPLED) !== 0),
        end(outcome) {
          if (ended) return;
          ended = true;
          if (outcome?.status) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, outcome.status);
          if (outcome?.failure !== undefined) {
            span.setAttribute(ATTR_ERROR_TYPE, outcome.failure);
            span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.failure });
          } else if (outcome?.status !== undefined && outcome.status >= 400) {
            // A client span's 4xx is an error too (semantic conventions): the gateway's request was refused.
            span.setAttribute(ATTR_ERROR_TYPE, String(outcome.status));
            span.setStatus({ code: SpanStatusCode.ERROR });
          }
          span.end();
        },
      };
    },
    end(slice, method, outcome) {
      const span = slice.span;
      if (span === undefined || !span.isRecording()) {
        span?.end();
        return;
      }
      const known = KNOWN_METHODS.has(method);
      if (outcome.route !== undefined) {
        span.updateName(`${known ? method : 'HTTP'} ${outcome.route}`);
        span.setAttribute(ATTR_HTTP_ROUTE, outcome.route);
      }
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, outcome.statusCode);
      if (outcome.operationId !== undefined) span.setAttribute(GATEWAY_ATTRIBUTES.operation, outcome.operationId);
      if (outcome.keyId !== undefined) span.setAttribute(GATEWAY_ATTRIBUTES.keyId, outcome.keyId);
      if (outcome.errorCode !== undefined) span.setAttribute(GATEWAY_ATTRIBUTES.errorCode, outcome.errorCode);
      // A server span is an error for 5xx only (semantic conventions): a 4xx is the client's, its code says why.
      if (outcome.statusCode >= 500) {
        span.setAttribute(ATTR_ERROR_TYPE, String(outcome.statusCode));
        span.setStatus({ code: SpanStatusCode.ERROR, ...(outcome.errorCode === undefined ? {} : { message: outcome.errorCode }) });
      }
      span.end();
    },
    shutdown: delivery.shutdown,
    droppedSpans: delivery.droppedSpans,
  };
}

/** An upstream URL's origin, parsed: `originLength` is how much of the URL as written it takes. */
interface UpstreamOrigin {
  hostname: string;
  port: number;
  /** As URL serialises it: scheme, host and a port that is not the default; never a user or password. */
  origin: string;
  originLength: number;
}

/**
 * The origin of an upstream URL the gateway built (its configured base, then the canonical path): each
 * origin parsed once, not every request's URL. Origins come from the configuration, so there are few.
 */
function upstreamOrigins(): (url: string) => UpstreamOrigin {
  const origins = new Map<string, UpstreamOrigin>();
  return (url) => {
    const originEnd = url.indexOf('/', url.indexOf('//') + 2);
    const written = originEnd === -1 ? url : url.slice(0, originEnd);
    let parsed = origins.get(written);
    if (parsed === undefined) {
      const target = new URL(written);
      parsed = {
        hostname: target.hostname,
        port: Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
        origin: target.origin,
        originLength: written.length,
      };
      origins.set(written, parsed);
    }
    return parsed;
  };
}

/** The Host header's name and port (`server.address`, `server.port`). */
function hostOf(header: string | undefined): { host?: string; port?: number } {
  if (header === undefined || header === '') return {};
  // Clients of one gateway name it the same way: the last header's answer is kept (one entry, so a client
  // that varies it costs the parse, not memory).
  if (header === lastHost.header) return lastHost.parsed;
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(header);
  const parsed = match === null ? {} : match[2] === undefined ? { host: match[1]! } : { host: match[1]!, port: Number(match[2]) };
  lastHost = { header, parsed };
  return parsed;
}

let lastHost: { header: string; parsed: { host?: string; port?: number } } = { header: '', parsed: {} };
