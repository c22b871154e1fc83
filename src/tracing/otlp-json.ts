// OTLP/JSON for a request's spans: each span's JSON is written once the request completes, and a batch's
// request is those spans between its resource and scope (the objects of the SDK's JSON serializer).
import type { Attributes, HrTime, Link, TraceState } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace';
import { spanFlags } from './otlp-protobuf.ts';
import { readableSpans } from './readable-spans.ts';
import type { RequestSpans } from './request-spans.ts';
import type { SpanEncoding } from './span-batch.ts';

/** Nanoseconds since the epoch, as OTLP/JSON writes a fixed64: a decimal string. */
function nanos([seconds, nanoseconds]: HrTime): string {
  const whole = Math.trunc(seconds);
  const fraction = Math.trunc(nanoseconds);
  return whole === 0 ? String(fraction) : `${whole}${String(fraction).padStart(9, '0')}`;
}

type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: number }
  | { doubleValue: number }
  | { bytesValue: string }
  | { arrayValue: { values: AnyValue[] } }
  | { kvlistValue: { values: KeyValue[] } }
  | Record<string, never>;
interface KeyValue {
  key: string;
  value: AnyValue;
}

function anyValue(value: unknown): AnyValue {
  switch (typeof value) {
    case 'string':
      return { stringValue: value };
    case 'number':
      return Number.isInteger(value) ? { intValue: value } : { doubleValue: value };
    case 'boolean':
      return { boolValue: value };
  }
  if (value instanceof Uint8Array) return { bytesValue: Buffer.from(value).toString('base64') };
  if (Array.isArray(value)) return { arrayValue: { values: value.map(anyValue) } };
  if (typeof value === 'object' && value !== null) return { kvlistValue: { values: keyValues(value as Attributes) } };
  return {};
}

function keyValues(attributes: Attributes): KeyValue[] {
  return Object.keys(attributes).map((key) => ({ key, value: anyValue(attributes[key]) }));
}

function traceStateOf(state: TraceState | undefined): string | undefined {
  return state?.serialize();
}

function event(timed: TimedEvent) {
  return {
    attributes: timed.attributes ? keyValues(timed.attributes) : [],
    name: timed.name,
    timeUnixNano: nanos(timed.time),
    droppedAttributesCount: timed.droppedAttributesCount ?? 0,
  };
}

function link(linked: Link) {
  return {
    attributes: linked.attributes ? keyValues(linked.attributes) : [],
    spanId: linked.context.spanId,
    traceId: linked.context.traceId,
    traceState: traceStateOf(linked.context.traceState),
    droppedAttributesCount: linked.droppedAttributesCount ?? 0,
    flags: spanFlags(linked.context.traceFlags, linked.context.isRemote),
  };
}

/**
 * Encodes spans for an OTLP/HTTP JSON export: `encode` a request's as it completes (each span's JSON text,
 * the spans themselves not kept), `request` for a batch of them. Ids are hex, times decimal strings, as
 * OTLP/JSON has them. The request's spans are made as the SDK's ReadableSpans first: JSON is the protocol
 * for trying things out; protobuf, the default, writes its bytes from the record (otlp-protobuf.ts).
 */
export class JsonSpans implements SpanEncoding<RequestSpans, string> {
  readonly contentType = 'application/json';
  private readonly head: string;
  private readonly tail: string;
  private readonly resource: Resource;
  private readonly scope: InstrumentationScope;

  constructor(resource: Resource, scope: InstrumentationScope) {
    this.resource = resource;
    this.scope = scope;
    const resourceJson = JSON.stringify({ attributes: keyValues(resource.attributes), droppedAttributesCount: 0, schemaUrl: resource.schemaUrl || undefined });
    const scopeJson = JSON.stringify({ name: scope.name, version: scope.version });
    this.head = `{"resourceSpans":[{"resource":${resourceJson},"scopeSpans":[{"scope":${scopeJson},"spans":[`;
    const scopeSchema = scope.schemaUrl ? `,"schemaUrl":${JSON.stringify(scope.schemaUrl)}` : '';
    const resourceSchema = resource.schemaUrl ? `,"schemaUrl":${JSON.stringify(resource.schemaUrl)}` : '';
    this.tail = `]${scopeSchema}}]${resourceSchema}}]}`;
  }

  count(request: RequestSpans): number {
    return request.spanCount();
  }

  encode(request: RequestSpans, queue: string[]): void {
    // Every span's text is made before any is queued: a throw leaves the queue as it was.
    const texts = readableSpans(request, this.resource, this.scope).map((span) => this.span(span));
    for (const text of texts) queue.push(text);
  }

  /** One span's JSON text. */
  span(span: ReadableSpan): string {
    const context = span.spanContext();
    return JSON.stringify({
      traceId: context.traceId,
      spanId: context.spanId,
      parentSpanId: span.parentSpanContext?.spanId || undefined,
      traceState: traceStateOf(context.traceState),
      name: span.name,
      kind: span.kind + 1,
      startTimeUnixNano: nanos(span.startTime),
      endTimeUnixNano: nanos(span.endTime),
      attributes: keyValues(span.attributes),
      droppedAttributesCount: span.droppedAttributesCount,
      events: span.events.map(event),
      droppedEventsCount: span.droppedEventsCount,
      status: { code: span.status.code, message: span.status.message },
      links: span.links.map(link),
      droppedLinksCount: span.droppedLinksCount,
      flags: spanFlags(context.traceFlags, span.parentSpanContext?.isRemote),
    });
  }

  /** Nothing to forget: each span's text is in the queue. */
  discard(): void {}

  request(spans: readonly string[]): Uint8Array {
    return Buffer.from(`${this.head}${spans.join(',')}${this.tail}`);
  }
}
