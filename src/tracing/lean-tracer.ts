// The gateway's spans, recorded without the SDK's Tracer and Span: the few fields an OTLP export reads, in one
// small object per span, handed to the SDK's span processor (the batch processor, the OTLP exporter) on end.
import {
  type Attributes,
  type AttributeValue,
  type Context,
  type Exception,
  type HrTime,
  type Link,
  SamplingDecision,
  type Span,
  type SpanAttributes,
  type SpanContext,
  SpanKind,
  type SpanOptions,
  type SpanStatus,
  SpanStatusCode,
  type TimeInput,
  type Tracer,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { type InstrumentationScope, isAttributeValue } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import { RandomIdGenerator, type ReadableSpan, type Sampler, type TimedEvent } from '@opentelemetry/sdk-trace';

/** What receives an ended span: the SDK's span processor interface, its onEnd only (the batch processor's onStart does nothing). */
export interface EndedSpans {
  onEnd(span: ReadableSpan): void;
}

/**
 * Wall-clock time from the monotonic clock: anchored to Date.now() and re-anchored every minute, so that a
 * span's duration is monotonic and its start follows the system clock (as the SDK's spans do).
 */
class Clock {
  private offsetMs = 0;
  private anchoredAt = Number.NEGATIVE_INFINITY;

  /** Milliseconds since the epoch, fractional. */
  nowMs(): number {
    const monotonic = performance.now();
    if (monotonic - this.anchoredAt > 60_000) {
      this.offsetMs = Date.now() - monotonic;
      this.anchoredAt = monotonic;
    }
    return monotonic + this.offsetMs;
  }
}

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
  return [seconds, nanos];
}

function timeInputMs(input: TimeInput | undefined, clock: Clock): number {
  if (input === undefined) return clock.nowMs();
  if (typeof input === 'number') return input;
  if (input instanceof Date) return input.getTime();
  return input[0] * 1000 + input[1] / 1e6;
}

const NO_LINKS: Link[] = [];
const NO_EVENTS: TimedEvent[] = [];
const NOT_ENDED: HrTime = [0, 0];
const UNSET: SpanStatus = { code: SpanStatusCode.UNSET };

/** A recorded span: the API's Span for the stages, the SDK's ReadableSpan for the exporter. */
class LeanSpan implements Span, ReadableSpan {
  readonly attributes: Attributes;
  // Shared empty lists and status until a span has its own: most spans never do, and every object a span
  // holds is kept until its batch is exported (allocation and GC are most of tracing's cost).
  links: Link[] = NO_LINKS;
  events: TimedEvent[] = NO_EVENTS;
  readonly startTime: HrTime;
  endTime: HrTime = NOT_ENDED;
  status: SpanStatus = UNSET;
  ended = false;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  name: string;
  readonly kind: SpanKind;
  readonly parentSpanContext?: SpanContext;
  private readonly context: SpanContext;
  private readonly owner: LeanTracer;
  private readonly startMs: number;
  private endMs = 0;

  constructor(name: string, kind: SpanKind, context: SpanContext, parent: SpanContext | undefined, attributes: Attributes, owner: LeanTracer) {
    this.name = name;
    this.kind = kind;
    this.context = context;
    if (parent !== undefined) this.parentSpanContext = parent;
    this.owner = owner;
    this.attributes = attributes;
    this.startMs = owner.clock.nowMs();
    this.startTime = hrTime(this.startMs);
  }

  get duration(): HrTime {
    return this.ended ? hrTime(this.endMs - this.startMs) : NOT_ENDED;
  }

  get resource(): Resource {
    return this.owner.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.owner.scope;
  }

  spanContext(): SpanContext {
    return this.context;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (!this.ended && key.length > 0 && isAttributeValue(value)) this.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: SpanAttributes): this {
    for (const key of Object.keys(attributes)) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: SpanAttributes | TimeInput, time?: TimeInput): this {
    if (this.ended) return this;
    const timeGiven = typeof attributesOrTime === 'number' || attributesOrTime instanceof Date || Array.isArray(attributesOrTime);
    const attributes = timeGiven ? {} : ((attributesOrTime as SpanAttributes | undefined) ?? {});
    const at = timeInputMs(timeGiven ? (attributesOrTime as TimeInput) : time, this.owner.clock);
    if (this.events === NO_EVENTS) this.events = [];
    this.events.push({ name, attributes, time: hrTime(at), droppedAttributesCount: 0 });
    return this;
  }

  addLink(link: Link): this {
    if (this.ended) return this;
    if (this.links === NO_LINKS) this.links = [];
    this.links.push(link);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.ended || this.status.code === SpanStatusCode.OK) return this;
    if (status.code === SpanStatusCode.UNSET) return this;
    this.status = status.code === SpanStatusCode.ERROR && status.message !== undefined ? { code: status.code, message: status.message } : { code: status.code };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.ended) return;
    this.endMs = Math.max(this.startMs, timeInputMs(endTime, this.owner.clock));
    this.endTime = hrTime(this.endMs);
    this.ended = true;
    this.owner.processor.onEnd(this);
  }

  isRecording(): boolean {
    return !this.ended;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: SpanAttributes = {};
    if (typeof exception === 'string') attributes['exception.message'] = exception;
    else {
      const type = exception.code ?? exception.name;
      if (type !== undefined) attributes['exception.type'] = String(type);
      if (exception.message !== undefined) attributes['exception.message'] = exception.message;
      if (exception.stack !== undefined) attributes['exception.stacktrace'] = exception.stack;
    }
    this.addEvent('exception', attributes, time);
  }
}

/**
 * The API's Tracer for the gateway's own spans: the configured sampler decides as the SDK's tracer has it
 * decide (a parent from `context`, else a new trace), a recorded span is a LeanSpan, and an ended one goes to
 * `processor`. No global context: a span's parent is the context it is started with, always.
 */
export class LeanTracer implements Tracer {
  readonly clock = new Clock();
  readonly scope: InstrumentationScope;
  readonly resource: Resource;
  readonly processor: EndedSpans;
  private readonly sampler: Sampler;
  private readonly ids = new RandomIdGenerator();

  constructor(resource: Resource, scope: { name: string; version: string }, sampler: Sampler, processor: EndedSpans) {
    this.resource = resource;
    this.scope = { name: scope.name, version: scope.version };
    this.sampler = sampler;
    this.processor = processor;
  }

  startSpan(name: string, options: SpanOptions = {}, context?: Context): Span {
    if (context === undefined) throw new Error('LeanTracer.startSpan: the parent context is required (the gateway sets no global context)');
    const parent = options.root ? undefined : trace.getSpanContext(context);
    const validParent = parent !== undefined && trace.isSpanContextValid(parent) ? parent : undefined;
    const traceId = validParent?.traceId ?? this.ids.generateTraceId();
    const spanId = this.ids.generateSpanId();
    const kind = options.kind ?? SpanKind.INTERNAL;
    const attributes: Attributes = {};
    if (options.attributes !== undefined)
      for (const key of Object.keys(options.attributes)) {
        const value = options.attributes[key];
        if (isAttributeValue(value)) attributes[key] = value;
      }
    const sampling = this.sampler.shouldSample(context, traceId, name, kind, attributes, options.links ?? []);
    const traceFlags = sampling.decision === SamplingDecision.RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE;
    const traceState = sampling.traceState ?? validParent?.traceState;
    const spanContext: SpanContext = traceState === undefined ? { traceId, spanId, traceFlags } : { traceId, spanId, traceFlags, traceState };
    if (sampling.decision === SamplingDecision.NOT_RECORD) return trace.wrapSpanContext(spanContext);
    if (sampling.attributes !== undefined) Object.assign(attributes, sampling.attributes);
    const span = new LeanSpan(name, kind, spanContext, validParent, attributes, this);
    if (options.links !== undefined) span.addLinks(options.links);
    return span;
  }

  startActiveSpan(): never {
    throw new Error('LeanTracer.startActiveSpan: not supported (the gateway sets no global context; use startSpan with a parent)');
  }
}
