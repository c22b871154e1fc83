// A request's spans as the SDK's ReadableSpan objects: what the SDK's JSON serializer writes for an OTLP/JSON
// export, and what its serializers take in the tests that hold the protobuf encoding to them.
import { type Attributes, type AttributeValue, type HrTime, type SpanContext, SpanKind, type SpanStatus } from '@opentelemetry/api';
import { type InstrumentationScope, TraceState } from '@opentelemetry/core';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { type RequestSpans, spanIdHex } from './request-spans.ts';
import type { SpanEncoding } from './span-batch.ts';
import { type AttributeKey, describeSpans, type FixedAttributes, type SpanSink } from './span-description.ts';

/** Milliseconds since the epoch as an HrTime, rounded as the protobuf encoding rounds them. */
function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
  return [seconds, nanos];
}

/** The request's spans as ReadableSpans, in the order `describeSpans` gives them. */
export function readableSpans(request: RequestSpans, resource: Resource, scope: InstrumentationScope): ReadableSpan[] {
  const sink = new ReadableSink(resource, scope);
  describeSpans(request, sink);
  return sink.spans;
}

/**
 * OTLP/JSON, as the SDK writes it: a request's spans are made as ReadableSpans when it completes (the record
 * may be reused after), and the SDK's JSON serializer writes a batch of them. JSON is the protocol for trying
 * things out; protobuf, the default, writes its bytes from the record (otlp-protobuf.ts).
 */
export function jsonSpans(resource: Resource, scope: InstrumentationScope): SpanEncoding<RequestSpans, ReadableSpan> {
  return {
    contentType: 'application/json',
    count: (request) => request.spanCount(),
    encode: (request, queue) => {
      // Every span is made before any is queued: a throw leaves the queue as it was.
      for (const span of readableSpans(request, resource, scope)) queue.push(span);
    },
    request: (spans) => {
      const bytes = JsonTraceSerializer.serializeRequest([...spans]);
      if (bytes === undefined) throw new Error('the OTLP/JSON serializer wrote nothing');
      return bytes;
    },
    // Nothing to forget: the spans are in the queue.
    discard: () => undefined,
  };
}

interface OpenSpan {
  request: RequestSpans;
  name: string;
  kind: SpanKind;
  context: SpanContext;
  parent: SpanContext | undefined;
  startMs: number;
  endMs: number;
  attributes: Attributes;
}

class ReadableSink implements SpanSink {
  readonly spans: ReadableSpan[] = [];
  private open: OpenSpan | undefined;
  private readonly resource: Resource;
  private readonly scope: InstrumentationScope;

  constructor(resource: Resource, scope: InstrumentationScope) {
    this.resource = resource;
    this.scope = scope;
  }

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
  ): void {
    const traceId = request.traceId.hex;
    const traceState = request.traceState === undefined ? undefined : new TraceState(request.traceState);
    const context: SpanContext = { traceId, spanId: spanIdHex(high, low), traceFlags: request.traceFlags, ...(traceState === undefined ? {} : { traceState }) };
    // The SERVER span's parent is the client's (remote); every other span's is one of the gateway's. The
    // encodings read a parent's span id and whether it is remote, nothing else of it.
    const parent: SpanContext | undefined =
      parentHigh === -1 ? undefined : { traceId, spanId: spanIdHex(parentHigh, parentLow), traceFlags: request.traceFlags, isRemote: kind === SpanKind.SERVER };
    this.open = { request, name, kind, context, parent, startMs, endMs: Math.max(startMs, endMs), attributes: {} };
  }

  fixed(attributes: FixedAttributes): void {
    for (const [key, value] of attributes.pairs) this.open!.attributes[key] = value;
  }

  attribute(key: AttributeKey, value: AttributeValue): void {
    this.open!.attributes[key.name] = value;
  }

  end(status: SpanStatus): void {
    const open = this.open!;
    this.open = undefined;
    const context = open.context;
    this.spans.push({
      name: open.name,
      kind: open.kind,
      spanContext: () => context,
      ...(open.parent === undefined ? {} : { parentSpanContext: open.parent }),
      startTime: hrTime(open.startMs),
      endTime: hrTime(open.endMs),
      duration: hrTime(open.endMs - open.startMs),
      status: status.message === undefined ? { code: status.code } : { code: status.code, message: status.message },
      attributes: open.attributes,
      links: [],
      events: [],
      ended: true,
      resource: this.resource,
      instrumentationScope: this.scope,
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    });
  }
}
