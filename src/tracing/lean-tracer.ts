// The gateway's spans, recorded without the SDK's Tracer and Span: the few fields an OTLP export reads, in one
// small object per span, handed to the SDK's span processor (the batch processor, the OTLP exporter) on end.
import {
  type Attributes,
  type AttributeValue,
  type Context,
  type Exception,
  type HrTime,
  type Link,
  ROOT_CONTEXT,
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
  type TraceState,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { type InstrumentationScope, isAttributeValue } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, Sampler, TimedEvent } from '@opentelemetry/sdk-trace';

/** What receives an ended span, sampled ones only: the SDK's span processor interface, its onEnd only (the batch processor's onStart does nothing). */
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

/** Milliseconds since the epoch as an HrTime (the encoder's putMsLE writes the same nanoseconds). */
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

/**
 * Ids as the SDK's RandomIdGenerator makes them (Math.random, never all zero), kept also as the bytes an
 * OTLP export writes, so that the encoder copies them instead of decoding hex: a trace id's 16 bytes once
 * per trace (its spans share them), a span id as two 32-bit words.
 */
const idBuffer = Buffer.allocUnsafe(16);
let lastHigh = 0;
let lastLow = 0;

function randomWord(): number {
  return (Math.random() * 4294967296) >>> 0;
}

/** A new span id: its words are left in lastHigh and lastLow. */
function newSpanId(): void {
  lastHigh = randomWord();
  lastLow = randomWord();
  if (lastHigh === 0 && lastLow === 0) lastLow = 1;
}

/** A span id's hex, from its words. */
function spanIdHex(high: number, low: number): string {
  idBuffer.writeUInt32BE(high, 0);
  idBuffer.writeUInt32BE(low, 4);
  return idBuffer.toString('hex', 0, 8);
}

/** A trace's id: hex for the API, bytes for the encoder. */
export interface TraceIdBytes {
  readonly hex: string;
  readonly bytes: Uint8Array;
}

function newTraceId(): TraceIdBytes {
  const bytes = Buffer.allocUnsafe(16);
  let any = 0;
  for (let at = 0; at < 16; at += 4) {
    const word = randomWord();
    any |= word;
    bytes.writeUInt32BE(word, at);
  }
  if (any === 0) bytes[15] = 1;
  return { hex: bytes.toString('hex'), bytes };
}

/** A valid (checked) hex trace id's bytes. */
function traceIdOf(hex: string): TraceIdBytes {
  return { hex, bytes: Buffer.from(hex, 'hex') };
}

/** A valid (checked) hex span id as its two words. */
function wordsOf(hex: string): [number, number] {
  return [Number.parseInt(hex.slice(0, 8), 16), Number.parseInt(hex.slice(8, 16), 16)];
}

/** A recorded span: the API's Span for the stages, the SDK's ReadableSpan for the exporter. */
export class LeanSpan implements Span, ReadableSpan {
  readonly attributes: Attributes;
  // Shared empty lists and status until a span has its own: most spans never do, and every object a span
  // holds is kept until its batch is exported (allocation and GC are most of tracing's cost).
  links: Link[] = NO_LINKS;
  events: TimedEvent[] = NO_EVENTS;
  status: SpanStatus = UNSET;
  ended = false;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  name: string;
  readonly kind: SpanKind;
  /** The ids' bytes, for the encoder: the trace's, this span's and its parent's (no parent: both words -1). */
  readonly traceIdBytes: TraceIdBytes;
  readonly spanIdHigh: number;
  readonly spanIdLow: number;
  readonly parentIdHigh: number;
  readonly parentIdLow: number;
  readonly traceFlags: number;
  readonly traceState: TraceState | undefined;
  /** Start and end in milliseconds since the epoch (fractional): the encoder writes them; HrTimes are made only when read. */
  readonly startMs: number;
  endMs = 0;
  readonly parentSpanContext?: SpanContext;
  /** The API's SpanContext, made when first asked for: most of a request's spans are never asked (their ids are only encoded). */
  private context: SpanContext | undefined;
  private readonly owner: LeanTracer;

  constructor(
    name: string,
    kind: SpanKind,
    ids: TraceIdBytes,
    spanIdHigh: number,
    spanIdLow: number,
    traceFlags: number,
    traceState: TraceState | undefined,
    /** A span of the gateway's, or a remote one's context. */
    parent: LeanSpan | SpanContext | undefined,
    parentHigh: number,
    parentLow: number,
    attributes: Attributes,
    owner: LeanTracer,
  ) {
    this.name = name;
    this.kind = kind;
    this.traceIdBytes = ids;
    this.spanIdHigh = spanIdHigh;
    this.spanIdLow = spanIdLow;
    this.traceFlags = traceFlags;
    this.traceState = traceState;
    if (parent !== undefined) this.parentSpanContext = parent instanceof LeanSpan ? parent.spanContext() : parent;
    this.parentIdHigh = parentHigh;
    this.parentIdLow = parentLow;
    this.owner = owner;
    this.attributes = attributes;
    this.startMs = owner.clock.nowMs();
  }

  get startTime(): HrTime {
    return hrTime(this.startMs);
  }

  get endTime(): HrTime {
    return this.ended ? hrTime(this.endMs) : NOT_ENDED;
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
    if (this.context === undefined) {
      const traceId = this.traceIdBytes.hex;
      const spanId = spanIdHex(this.spanIdHigh, this.spanIdLow);
      const { traceFlags, traceState } = this;
      this.context = traceState === undefined ? { traceId, spanId, traceFlags } : { traceId, spanId, traceFlags, traceState };
    }
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
    this.ended = true;
    // Only sampled spans are exported (as the SDK's batch processor has it): the others end here.
    if ((this.traceFlags & TraceFlags.SAMPLED) !== 0) this.owner.processor.onEnd(this);
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
  private readonly childrenFollowParent: boolean;

  /**
   * `childrenFollowParent`: the sampler would record and sample every child of a sampled span of the
   * gateway's (a local parent), with no attributes or trace state of its own, so `startChild` need not ask it.
   * True of every sampler OTEL_TRACES_SAMPLER names (the parent-based ones delegate a local sampled parent to
   * always_on; traceidratio decides by the trace id, which the child shares): from-environment's test checks it.
   */
  constructor(
    resource: Resource,
    scope: { name: string; version: string },
    sampler: Sampler,
    processor: EndedSpans,
    options: { childrenFollowParent?: boolean } = {},
  ) {
    this.resource = resource;
    this.scope = { name: scope.name, version: scope.version };
    this.sampler = sampler;
    this.processor = processor;
    this.childrenFollowParent = options.childrenFollowParent ?? false;
  }

  /**
   * A child of a span of this tracer's, for a stage's own work: the parent's trace, its trace state, sampled
   * as it is. `attributes` becomes the span's own object (pass a new one). Without a context: the API's
   * contexts cost a Map each, and the sampler is asked only where its answer could differ.
   */
  startChild(parent: LeanSpan, name: string, kind: SpanKind, attributes: Attributes = {}): Span {
    if (!this.childrenFollowParent || (parent.traceFlags & TraceFlags.SAMPLED) === 0)
      return this.startSpan(name, { kind, attributes }, trace.setSpan(ROOT_CONTEXT, parent));
    newSpanId();
    return new LeanSpan(
      name,
      kind,
      parent.traceIdBytes,
      lastHigh,
      lastLow,
      TraceFlags.SAMPLED,
      parent.traceState,
      parent,
      parent.spanIdHigh,
      parent.spanIdLow,
      attributes,
      this,
    );
  }

  startSpan(name: string, options: SpanOptions = {}, context?: Context): Span {
    if (context === undefined) throw new Error('LeanTracer.startSpan: the parent context is required (the gateway sets no global context)');
    // A parent of the gateway's own is valid by construction, and carries its ids' bytes; any other is checked.
    const parentSpan = options.root ? undefined : trace.getSpan(context);
    const localParent = parentSpan instanceof LeanSpan ? parentSpan : undefined;
    const remoteParent = localParent === undefined ? parentSpan?.spanContext() : undefined;
    const validRemote = remoteParent !== undefined && trace.isSpanContextValid(remoteParent) ? remoteParent : undefined;
    let traceIdBytes: TraceIdBytes;
    let parentHigh = -1;
    let parentLow = -1;
    if (localParent !== undefined) {
      traceIdBytes = localParent.traceIdBytes;
      parentHigh = localParent.spanIdHigh;
      parentLow = localParent.spanIdLow;
    } else if (validRemote !== undefined) {
      traceIdBytes = traceIdOf(validRemote.traceId);
      [parentHigh, parentLow] = wordsOf(validRemote.spanId);
    } else traceIdBytes = newTraceId();
    const traceId = traceIdBytes.hex;
    newSpanId();
    const spanIdHigh = lastHigh;
    const spanIdLow = lastLow;
    const kind = options.kind ?? SpanKind.INTERNAL;
    const attributes: Attributes = {};
    const given = options.attributes;
    if (given !== undefined)
      for (const key in given) {
        const value = given[key];
        if (Object.hasOwn(given, key) && isAttributeValue(value)) attributes[key] = value;
      }
    const sampling = this.sampler.shouldSample(context, traceId, name, kind, attributes, options.links ?? NO_LINKS);
    const traceFlags = sampling.decision === SamplingDecision.RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE;
    const traceState = sampling.traceState ?? (localParent !== undefined ? localParent.traceState : validRemote?.traceState);
    if (sampling.decision === SamplingDecision.NOT_RECORD) {
      const spanId = spanIdHex(spanIdHigh, spanIdLow);
      return trace.wrapSpanContext(traceState === undefined ? { traceId, spanId, traceFlags } : { traceId, spanId, traceFlags, traceState });
    }
    if (sampling.attributes !== undefined) Object.assign(attributes, sampling.attributes);
    const parent = localParent ?? validRemote;
    const span = new LeanSpan(name, kind, traceIdBytes, spanIdHigh, spanIdLow, traceFlags, traceState, parent, parentHigh, parentLow, attributes, this);
    if (options.links !== undefined) span.addLinks(options.links);
    return span;
  }

  startActiveSpan(): never {
    throw new Error('LeanTracer.startActiveSpan: not supported (the gateway sets no global context; use startSpan with a parent)');
  }
}
