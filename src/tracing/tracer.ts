// The gateway's part in a trace: its span for each request and for the upstream exchange, recorded or only propagated.
import type { IncomingMessage } from 'node:http';
import { type Attributes, type Link, ROOT_CONTEXT, SamplingDecision, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { RandomIdGenerator, type Sampler } from '@opentelemetry/sdk-trace';
import { ATTR_HTTP_REQUEST_METHOD, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT, ATTR_URL_PATH, ATTR_URL_SCHEME } from '@opentelemetry/semantic-conventions';
import { type HostAttributes, newTraceId, type RequestOutcome, RequestSpans, spanIdHex, spanIdWords, traceIdOf, type UpstreamOrigin } from './request-spans.ts';
import { isKnownMethod } from './span-description.ts';
import { formatTraceParent, remoteParent } from './trace-context.ts';

/** The trace slice of a request's record: written on arrival, read by the stages, the proxy and the completion hook. */
export interface TraceSlice {
  readonly traceId: string;
  /** The gateway's span for the request (the SERVER span): the access log's `span_id`. */
  readonly spanId: string;
  readonly sampled: boolean;
  /** The client's `tracestate`, checked, passed on to the upstream; undefined when there is none (or a new trace began). */
  readonly traceState: string | undefined;
  /**
   * The request's spans, when they are recorded and exported (an exporter is configured and the request
   * sampled): each stage writes its own span's slot, the completion hook hands them to the export.
   */
  readonly spans: RequestSpans | undefined;
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
  /** On completion: the request's spans end and go to the export. */
  end(slice: TraceSlice, outcome: RequestOutcome): void;
  /** Sends what is queued (on shutdown, after the last request completed). */
  shutdown(): Promise<void>;
  /** Spans recorded but never delivered (a full queue, a failed export): counted since start. */
  droppedSpans(): number;
}

const ids = new RandomIdGenerator();

const NOT_RECORDED: ExchangeSpan['end'] = () => undefined;

/** The SERVER span's links, for the sampler: it has none. */
const NO_LINKS: Link[] = [];

/** An exchange whose span is not recorded: a span id of the gateway's all the same, as the upstream's parent. */
function unrecordedExchange(slice: TraceSlice): ExchangeSpan {
  return { traceparent: formatTraceParent(slice.traceId, ids.generateSpanId(), slice.sampled), end: NOT_RECORDED };
}

/**
 * No exporter: no span is recorded. The gateway still takes part in the trace: it continues the client's
 * (or starts one, not sampled: nothing records it here), and names a span id of its own, which the access
 * log and the upstream's `traceparent` share, so a backend's log line joins the gateway's by it.
 */
export function propagationOnly(): Tracing {
  return {
    recording: false,
    begin(req) {
      const parent = remoteParent(req.headers);
      const spanId = ids.generateSpanId();
      if (parent === undefined) return { traceId: ids.generateTraceId(), spanId, sampled: false, traceState: undefined, spans: undefined };
      return { traceId: parent.traceId, spanId, sampled: parent.sampled, traceState: parent.traceState, spans: undefined };
    },
    startExchange: (slice) => ({ traceparent: formatTraceParent(slice.traceId, slice.spanId, slice.sampled), end: NOT_RECORDED }),
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
 * Spans recorded for each request the sampler samples, and handed to `completed` as the request
 * completes; `shutdown` sends what is queued. The sampler decides for the SERVER span as the SDK's tracer
 * asks it (the client's span as a remote parent, or none); the stages' spans and the CLIENT span follow it
 * without asking, which every sampler OTEL_TRACES_SAMPLER names would answer the same way (a sampled local
 * parent's child is sampled, an unsampled one's is not). None of the six adds attributes of its own, and
 * the SERVER span takes none (test/unit/tracing/request-spans.test.ts checks the six). A request the
 * sampler would record but not sample has nothing to export, so nothing is recorded.
 */
export function recordingTracing(sampler: Sampler, completed: CompletedSpans, delivery: Pick<Tracing, 'shutdown' | 'droppedSpans'>): Tracing {
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
      if (sampling.decision !== SamplingDecision.RECORD_AND_SAMPLED)
        return { traceId: traceId.hex, spanId: ids.generateSpanId(), sampled: false, traceState: parent?.traceState, spans: undefined };
      const spans = new RequestSpans(
        {
          traceId,
          remoteParent: parent === undefined ? undefined : spanIdWords(parent.spanId),
          traceFlags: TraceFlags.SAMPLED,
          traceState: sampling.traceState?.serialize() ?? parent?.traceState,
        },
        { method, scheme, path, host },
      );
      return { traceId: traceId.hex, spanId: spans.serverSpanId(), sampled: true, traceState: parent?.traceState, spans };
    },
    startExchange(slice, method, url) {
      const spans = slice.spans;
      if (spans === undefined) return unrecordedExchange(slice);
      const target = upstreamOrigin(url);
      const query = url.indexOf('?');
      spans.startClient(method, target, query === -1 ? url.slice(target.originLength) : url.slice(target.originLength, query));
      return {
        traceparent: formatTraceParent(slice.traceId, spanIdHex(spans.clientHigh, spans.clientLow), true),
        end: (outcome) => spans.endClient(outcome?.status, outcome?.failure),
      };
    },
    end(slice, outcome) {
      const spans = slice.spans;
      if (spans === undefined || spans.endMs !== 0) return;
      spans.end(outcome);
      completed.onEnd(spans);
    },
    shutdown: delivery.shutdown,
    droppedSpans: delivery.droppedSpans,
  };
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
