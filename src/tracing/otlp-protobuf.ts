// OTLP/protobuf for ended spans, one span at a time: each span's bytes are written as it ends, and a batch's
// request is those bytes between its resource and scope (the layout of the SDK's serializer, byte for byte).
import type { Attributes, AttributeValue, HrTime, Link, SpanStatus } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace';
import { LeanSpan } from './lean-tracer.ts';

const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;
/** Span.flags: the W3C trace flags, and whether the parent is known to be remote (the SDK's bits 8 and 9). */
const FLAGS_HAS_IS_REMOTE = 0x100;
const FLAGS_IS_REMOTE = 0x200;
const TWO_POW_32 = 4294967296;
const MIN_INT64 = -(2 ** 63);
const MAX_INT64 = 2 ** 63;

/** Each ASCII code's value as a hex digit (0 for a character that is none: the API's ids are hex, checked where they come in). */
const HEX_VALUE = new Uint8Array(128);
for (let digit = 0; digit < 16; digit++) {
  HEX_VALUE['0123456789abcdef'.charCodeAt(digit)] = digit;
  HEX_VALUE['0123456789ABCDEF'.charCodeAt(digit)] = digit;
}

/**
 * A protobuf writer over one reusable buffer that grows as needed. A nested message reserves one byte for
 * its length and moves its body when the length needs more (as the SDK's writer does): most are short.
 */
class Writer {
  buffer = Buffer.allocUnsafe(4096);
  pos = 0;

  ensure(size: number): void {
    if (this.pos + size <= this.buffer.length) return;
    let length = this.buffer.length * 2;
    while (length < this.pos + size) length *= 2;
    const grown = Buffer.allocUnsafe(length);
    this.buffer.copy(grown, 0, 0, this.pos);
    this.buffer = grown;
  }

  tag(field: number, wireType: number): void {
    this.uint32((field << 3) | wireType);
  }

  uint32(value: number): void {
    this.ensure(5);
    let v = value >>> 0;
    while (v > 127) {
      this.buffer[this.pos++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buffer[this.pos++] = v;
  }

  /** An int64 varint, two's complement for a negative (ten bytes), as protobuf writes one. */
  int64(value: number): void {
    if (value >= 0 && value <= 0xffffffff) {
      this.uint32(value);
      return;
    }
    this.ensure(10);
    const magnitude = Math.abs(value);
    let low = magnitude >>> 0;
    let high = (magnitude / TWO_POW_32) >>> 0;
    if (value < 0) {
      low = (~low + 1) >>> 0;
      high = (~high + (low === 0 ? 1 : 0)) >>> 0;
    }
    while (high > 0 || low > 127) {
      this.buffer[this.pos++] = (low & 127) | 128;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    this.buffer[this.pos++] = low & 127;
  }

  fixed32(value: number): void {
    this.ensure(4);
    this.pos = this.buffer.writeUInt32LE(value >>> 0, this.pos);
  }

  /** An HrTime as nanoseconds since the epoch. */
  time([seconds, nanos]: HrTime): void {
    this.ensure(8);
    this.pos = putNanosLE(this.buffer, this.pos, seconds, nanos);
  }

  double(value: number): void {
    this.ensure(8);
    this.pos = this.buffer.writeDoubleLE(value, this.pos);
  }

  string(value: string): void {
    // Attribute keys and most values are short ASCII: written here a byte a character, without a call into
    // Buffer's native code to measure and another to write.
    if (value.length < 128) {
      this.ensure(value.length + 1);
      let at = this.pos + 1;
      for (let i = 0; i < value.length; i++) {
        const code = value.charCodeAt(i);
        if (code > 127) {
          at = -1;
          break;
        }
        this.buffer[at++] = code;
      }
      if (at >= 0) {
        this.buffer[this.pos] = value.length;
        this.pos = at;
        return;
      }
    }
    const length = Buffer.byteLength(value);
    this.uint32(length);
    this.ensure(length);
    this.pos += this.buffer.write(value, this.pos, length, 'utf8');
  }

  /** A trace or span id, given in hex (as the API holds ids), as its bytes (a span not of the gateway's, or a link). */
  hexId(hex: string): void {
    const length = hex.length >>> 1;
    this.uint32(length);
    this.ensure(length);
    const buffer = this.buffer;
    for (let i = 0; i < length; i++) buffer[this.pos++] = (HEX_VALUE[hex.charCodeAt(2 * i) & 127]! << 4) | HEX_VALUE[hex.charCodeAt(2 * i + 1) & 127]!;
  }

  bytes(value: Uint8Array): void {
    this.uint32(value.length);
    this.ensure(value.length);
    this.buffer.set(value, this.pos);
    this.pos += value.length;
  }

  /** Bytes already encoded (tagged, and sized where they need it). */
  raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buffer.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** Starts a nested message (after its tag): returns where its length goes. */
  begin(): number {
    this.ensure(1);
    return this.pos++;
  }

  /** Ends the nested message begun at `at`: writes its length there, moving the body if the length needs more bytes. */
  end(at: number): void {
    const length = this.pos - at - 1;
    const size = length < 0x80 ? 1 : length < 0x4000 ? 2 : length < 0x200000 ? 3 : length < 0x10000000 ? 4 : 5;
    if (size > 1) {
      this.ensure(size - 1);
      this.buffer.copyWithin(at + size, at + 1, this.pos);
      this.pos += size - 1;
    }
    let v = length;
    let p = at;
    while (v > 127) {
      this.buffer[p++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buffer[p] = v;
  }
}

function writeAnyValue(writer: Writer, value: unknown): void {
  switch (typeof value) {
    case 'string':
      writer.tag(1, LENGTH_DELIMITED);
      writer.string(value);
      return;
    case 'boolean':
      writer.tag(2, VARINT);
      writer.uint32(value ? 1 : 0);
      return;
    case 'number':
      if (Number.isInteger(value) && value >= MIN_INT64 && value < MAX_INT64) {
        writer.tag(3, VARINT);
        writer.int64(value);
      } else {
        writer.tag(4, FIXED64);
        writer.double(value);
      }
      return;
  }
  if (value instanceof Uint8Array) {
    writer.tag(7, LENGTH_DELIMITED);
    writer.bytes(value);
  } else if (Array.isArray(value)) {
    writer.tag(5, LENGTH_DELIMITED);
    const array = writer.begin();
    for (const item of value) {
      writer.tag(1, LENGTH_DELIMITED);
      const element = writer.begin();
      writeAnyValue(writer, item);
      writer.end(element);
    }
    writer.end(array);
  } else if (typeof value === 'object' && value !== null) {
    writer.tag(6, LENGTH_DELIMITED);
    const list = writer.begin();
    for (const [key, item] of Object.entries(value)) {
      writer.tag(1, LENGTH_DELIMITED);
      writeKeyValue(writer, key, item);
    }
    writer.end(list);
  }
  // null and undefined (in an array): an empty AnyValue, as the SDK writes them.
}

/** A KeyValue message, its tag already written. */
function writeKeyValue(writer: Writer, key: string, value: AttributeValue | unknown): void {
  const keyValue = writer.begin();
  writer.tag(1, LENGTH_DELIMITED);
  writer.string(key);
  writer.tag(2, LENGTH_DELIMITED);
  const any = writer.begin();
  writeAnyValue(writer, value);
  writer.end(any);
  writer.end(keyValue);
}

function writeAttributes(writer: Writer, attributes: Attributes, field: number): void {
  // Own keys only (as the SDK's serializer takes them), listed without an Object.hasOwn call each.
  const keys = Object.keys(attributes);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const value = attributes[key];
    if (field === SPAN_ATTRIBUTES) {
      const encoded = spanAttributes.bytes(key, value);
      if (encoded !== undefined) {
        writer.raw(encoded);
        continue;
      }
    }
    writer.tag(field, LENGTH_DELIMITED);
    writeKeyValue(writer, key, value);
  }
}

/** Span.attributes' field number. */
const SPAN_ATTRIBUTES = 9;

/**
 * Span attributes as encoded once: most of a request's attributes are the same pair on every request
 * (`http.request.method` GET, `gateway.auth.result` ok, the route), so their bytes (tag, length and
 * KeyValue) are copied, not written a field at a time. Bounded: at most `maxKeys` keys of `maxValues`
 * scalar values each, short strings only; a pair past that is written as any other (a key of many
 * values, like `url.full`, keeps its first few and takes no more room).
 */
class EncodedAttributes {
  private readonly byKey = new Map<string, Map<AttributeValue, Buffer>>();
  private readonly writer = new Writer();
  private readonly maxKeys: number;
  private readonly maxValues: number;

  constructor(maxKeys: number, maxValues: number) {
    this.maxKeys = maxKeys;
    this.maxValues = maxValues;
  }

  bytes(key: string, value: AttributeValue | undefined): Buffer | undefined {
    if (value === undefined) return undefined;
    const values = this.byKey.get(key);
    return values?.get(value) ?? this.remember(key, value, values);
  }

  private remember(key: string, value: AttributeValue, known: Map<AttributeValue, Buffer> | undefined): Buffer | undefined {
    if (!(typeof value === 'number' || typeof value === 'boolean' || (typeof value === 'string' && value.length <= 64))) return undefined;
    let values = known;
    if (values === undefined) {
      if (this.byKey.size >= this.maxKeys) return undefined;
      values = new Map();
      this.byKey.set(key, values);
    }
    if (values.size >= this.maxValues) return undefined;
    const writer = this.writer;
    writer.pos = 0;
    writer.tag(SPAN_ATTRIBUTES, LENGTH_DELIMITED);
    writeKeyValue(writer, key, value);
    const bytes = Buffer.from(writer.buffer.subarray(0, writer.pos));
    values.set(value, bytes);
    return bytes;
  }
}

const spanAttributes = new EncodedAttributes(64, 32);

/** Span.flags, in both encodings: the W3C trace flags, and whether the parent is known to be remote (the SDK's bits 8 and 9). */
export function spanFlags(traceFlags: number, isRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | FLAGS_HAS_IS_REMOTE | (isRemote ? FLAGS_IS_REMOTE : 0);
}

function writeEvent(writer: Writer, event: TimedEvent): void {
  writer.tag(11, LENGTH_DELIMITED);
  const at = writer.begin();
  writer.tag(1, FIXED64);
  writer.time(event.time);
  writer.tag(2, LENGTH_DELIMITED);
  writer.string(event.name);
  if (event.attributes) writeAttributes(writer, event.attributes, 3);
  writer.tag(4, VARINT);
  writer.uint32(event.droppedAttributesCount ?? 0);
  writer.end(at);
}

function writeLink(writer: Writer, link: Link): void {
  writer.tag(13, LENGTH_DELIMITED);
  const at = writer.begin();
  writer.tag(1, LENGTH_DELIMITED);
  writer.hexId(link.context.traceId);
  writer.tag(2, LENGTH_DELIMITED);
  writer.hexId(link.context.spanId);
  const traceState = link.context.traceState?.serialize();
  if (traceState) {
    writer.tag(3, LENGTH_DELIMITED);
    writer.string(traceState);
  }
  if (link.attributes) writeAttributes(writer, link.attributes, 4);
  writer.tag(5, VARINT);
  writer.uint32(link.droppedAttributesCount ?? 0);
  writer.tag(6, FIXED32);
  writer.fixed32(spanFlags(link.context.traceFlags, link.context.isRemote));
  writer.end(at);
}

function writeStatus(writer: Writer, status: SpanStatus): void {
  writer.tag(15, LENGTH_DELIMITED);
  const at = writer.begin();
  if (status.message) {
    writer.tag(2, LENGTH_DELIMITED);
    writer.string(status.message);
  }
  writer.tag(3, VARINT);
  writer.uint32(status.code);
  writer.end(at);
}

/** A Span message (opentelemetry/proto/trace/v1/trace.proto), without its tag and length. */
function writeSpan(writer: Writer, span: ReadableSpan): void {
  if (span instanceof LeanSpan) {
    writeOwnSpan(writer, span);
    return;
  }
  const context = span.spanContext();
  writer.tag(1, LENGTH_DELIMITED);
  writer.hexId(context.traceId);
  writer.tag(2, LENGTH_DELIMITED);
  writer.hexId(context.spanId);
  const traceState = context.traceState?.serialize();
  if (traceState) {
    writer.tag(3, LENGTH_DELIMITED);
    writer.string(traceState);
  }
  if (span.parentSpanContext?.spanId) {
    writer.tag(4, LENGTH_DELIMITED);
    writer.hexId(span.parentSpanContext.spanId);
  }
  writer.tag(5, LENGTH_DELIMITED);
  writer.string(span.name);
  writer.tag(6, VARINT);
  writer.uint32(span.kind + 1);
  writer.tag(7, FIXED64);
  writer.time(span.startTime);
  writer.tag(8, FIXED64);
  writer.time(span.endTime);
  writeAttributes(writer, span.attributes, SPAN_ATTRIBUTES);
  writeSpanTail(writer, span, context.traceFlags);
}

/** Span's fields after its attributes (10 on), the same for every span. */
function writeSpanTail(writer: Writer, span: ReadableSpan, traceFlags: number): void {
  writer.tag(10, VARINT);
  writer.uint32(span.droppedAttributesCount);
  for (const event of span.events) writeEvent(writer, event);
  writer.tag(12, VARINT);
  writer.uint32(span.droppedEventsCount);
  for (const link of span.links) writeLink(writer, link);
  writer.tag(14, VARINT);
  writer.uint32(span.droppedLinksCount);
  writeStatus(writer, span.status);
  writer.tag(16, FIXED32);
  writer.fixed32(spanFlags(traceFlags, span.parentSpanContext?.isRemote));
}

/** The most a span of the gateway's takes before its name's length: trace id, span id and parent id (tagged and sized), the name's tag. */
const OWN_IDS_BYTES = 2 + 16 + 2 + 8 + 2 + 8 + 1;
/** Of which, after a trace state: the parent id and the name's tag. */
const OWN_PARENT_BYTES = 2 + 8 + 1;
/** And between its name and its attributes: kind, start and end, tagged. */
const OWN_TIMES_BYTES = 2 + 9 + 9;
/** And after its attributes, when it has no events, links or status message: the counts, the status, the flags' tag. */
const OWN_TAIL_BYTES = 6 + 4 + 2;

/**
 * A span of the gateway's: its ids copied from the words and bytes it keeps, its fixed-size fields written
 * a byte at a time into room made once, so that the writer's calls (each one a call: the encoder is too
 * large for V8 to inline them all) are left for the fields of variable length. The same bytes as writeSpan's.
 */
function writeOwnSpan(writer: Writer, span: LeanSpan): void {
  writer.ensure(OWN_IDS_BYTES);
  let buffer = writer.buffer;
  let pos = writer.pos;
  buffer[pos++] = (1 << 3) | LENGTH_DELIMITED;
  buffer[pos++] = 16;
  const traceId = span.traceIdBytes.bytes;
  for (let i = 0; i < 16; i++) buffer[pos++] = traceId[i]!;
  buffer[pos++] = (2 << 3) | LENGTH_DELIMITED;
  buffer[pos++] = 8;
  pos = putWordBE(buffer, pos, span.spanIdHigh);
  pos = putWordBE(buffer, pos, span.spanIdLow);
  const traceState = span.traceState?.serialize();
  if (traceState) {
    writer.pos = pos;
    writer.tag(3, LENGTH_DELIMITED);
    writer.string(traceState);
    writer.ensure(OWN_PARENT_BYTES);
    buffer = writer.buffer;
    pos = writer.pos;
  }
  if (span.parentIdHigh !== -1) {
    buffer[pos++] = (4 << 3) | LENGTH_DELIMITED;
    buffer[pos++] = 8;
    pos = putWordBE(buffer, pos, span.parentIdHigh);
    pos = putWordBE(buffer, pos, span.parentIdLow);
  }
  buffer[pos++] = (5 << 3) | LENGTH_DELIMITED;
  writer.pos = pos;
  writer.string(span.name);
  writer.ensure(OWN_TIMES_BYTES);
  buffer = writer.buffer;
  pos = writer.pos;
  buffer[pos++] = (6 << 3) | VARINT;
  buffer[pos++] = span.kind + 1;
  buffer[pos++] = (7 << 3) | FIXED64;
  pos = putMsLE(buffer, pos, span.startMs);
  buffer[pos++] = (8 << 3) | FIXED64;
  pos = putMsLE(buffer, pos, span.endMs);
  writer.pos = pos;
  writeAttributes(writer, span.attributes, SPAN_ATTRIBUTES);
  // A span of the gateway's drops nothing (its counts are 0), and seldom has events, links or a status message.
  if (span.events.length > 0 || span.links.length > 0 || span.status.message) {
    writeSpanTail(writer, span, span.traceFlags);
    return;
  }
  writer.ensure(OWN_TAIL_BYTES);
  buffer = writer.buffer;
  pos = writer.pos;
  buffer[pos++] = (10 << 3) | VARINT;
  buffer[pos++] = 0;
  buffer[pos++] = (12 << 3) | VARINT;
  buffer[pos++] = 0;
  buffer[pos++] = (14 << 3) | VARINT;
  buffer[pos++] = 0;
  buffer[pos++] = (15 << 3) | LENGTH_DELIMITED;
  buffer[pos++] = 2;
  buffer[pos++] = (3 << 3) | VARINT;
  buffer[pos++] = span.status.code;
  // Field 16's tag is two bytes as a varint: (16 << 3) | FIXED32 is 133.
  buffer[pos++] = 0x85;
  buffer[pos++] = 0x01;
  writer.pos = pos;
  writer.fixed32(spanFlags(span.traceFlags, span.parentSpanContext?.isRemote));
}

/** A 32-bit word, big-endian (a span id's half, as its hex reads). */
function putWordBE(buffer: Buffer, pos: number, word: number): number {
  buffer[pos] = word >>> 24;
  buffer[pos + 1] = (word >>> 16) & 0xff;
  buffer[pos + 2] = (word >>> 8) & 0xff;
  buffer[pos + 3] = word & 0xff;
  return pos + 4;
}

/** Milliseconds since the epoch as seconds and nanoseconds, rounded as the API's hrTime() rounds them, written as putNanosLE writes them. */
function putMsLE(buffer: Buffer, pos: number, ms: number): number {
  const seconds = Math.floor(ms / 1000);
  return putNanosLE(buffer, pos, seconds, Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6)));
}

/** Seconds and nanoseconds as a fixed64 of nanoseconds since the epoch, little-endian: past 2^53, so computed in two 32-bit halves. */
function putNanosLE(buffer: Buffer, pos: number, seconds: number, nanos: number): number {
  const fromLow = (seconds & 0xffff) * 1e9;
  const fromHigh = ((seconds / 65536) >>> 0) * 1e9;
  const low = (fromLow >>> 0) + (((fromHigh & 0xffff) * 65536) >>> 0) + nanos;
  const high = Math.floor(fromLow / TWO_POW_32) + ((fromHigh / 65536) >>> 0) + Math.floor(low / TWO_POW_32);
  const lowWord = low >>> 0;
  const highWord = high >>> 0;
  buffer[pos] = lowWord & 0xff;
  buffer[pos + 1] = (lowWord >>> 8) & 0xff;
  buffer[pos + 2] = (lowWord >>> 16) & 0xff;
  buffer[pos + 3] = lowWord >>> 24;
  buffer[pos + 4] = highWord & 0xff;
  buffer[pos + 5] = (highWord >>> 8) & 0xff;
  buffer[pos + 6] = (highWord >>> 16) & 0xff;
  buffer[pos + 7] = highWord >>> 24;
  return pos + 8;
}

/** The bytes of a varint of `value` (below 2^32). */
function varintSize(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5;
}

/**
 * Encodes ended spans for an OTLP/HTTP protobuf export: `span` as each ends, `request` for a batch of them.
 * A span's bytes are appended to one buffer that holds every queued span (oldest first) and the queue keeps
 * only its length: no object per span outlives the request that made it, which is what kept the garbage
 * collector busy (docs/decisions/0008-lean-spans.md). `request` takes the oldest spans' bytes off the front.
 */
export class ProtobufSpans {
  readonly contentType = 'application/x-protobuf';
  /** The queued spans' bytes, each a ScopeSpans entry (tag, length, Span message), oldest first. */
  private readonly queued = new Writer();
  private readonly head = new Writer();
  /** ResourceSpans' field 1 (the resource) and the start of field 2 (ScopeSpans: its scope), written once. */
  private readonly resourceBytes: Buffer;
  private readonly scopeBytes: Buffer;
  /** ScopeSpans' and ResourceSpans' schema URLs (field 3), written once; empty when there are none. */
  private readonly scopeSchemaBytes: Buffer;
  private readonly resourceSchemaBytes: Buffer;

  constructor(resource: Resource, scope: InstrumentationScope) {
    const writer = this.head;
    const written = (write: () => void) => {
      writer.pos = 0;
      write();
      return Buffer.from(writer.buffer.subarray(0, writer.pos));
    };
    this.resourceBytes = written(() => {
      writer.tag(1, LENGTH_DELIMITED);
      const resourceAt = writer.begin();
      writeAttributes(writer, resource.attributes, 1);
      writer.tag(2, VARINT);
      writer.uint32(0);
      writer.end(resourceAt);
    });
    this.scopeBytes = written(() => {
      writer.tag(1, LENGTH_DELIMITED);
      const scopeAt = writer.begin();
      writer.tag(1, LENGTH_DELIMITED);
      writer.string(scope.name);
      if (scope.version) {
        writer.tag(2, LENGTH_DELIMITED);
        writer.string(scope.version);
      }
      writer.end(scopeAt);
    });
    const schemaUrl = (url: string | undefined) =>
      written(() => {
        if (!url) return;
        writer.tag(3, LENGTH_DELIMITED);
        writer.string(url);
      });
    this.scopeSchemaBytes = schemaUrl(scope.schemaUrl);
    this.resourceSchemaBytes = schemaUrl(resource.schemaUrl);
  }

  /** Appends the span's bytes to the queued ones; returns their length, which is what the queue keeps. */
  span(span: ReadableSpan): number {
    const writer = this.queued;
    const start = writer.pos;
    try {
      writer.tag(2, LENGTH_DELIMITED);
      const at = writer.begin();
      writeSpan(writer, span);
      writer.end(at);
    } catch (error) {
      writer.pos = start; // a span half written is no span: the queued bytes stay whole
      throw error;
    }
    return writer.pos - start;
  }

  discard(): void {
    this.queued.pos = 0;
  }

  /** An ExportTraceServiceRequest (one ResourceSpans, one ScopeSpans) of the oldest queued spans, whose lengths are given. */
  request(spans: readonly number[]): Uint8Array {
    let length = 0;
    for (const spanLength of spans) length += spanLength;
    const scopeSpansLength = this.scopeBytes.length + length + this.scopeSchemaBytes.length;
    const resourceSpansLength = this.resourceBytes.length + 1 + varintSize(scopeSpansLength) + scopeSpansLength + this.resourceSchemaBytes.length;
    const head = this.head;
    head.pos = 0;
    head.tag(1, LENGTH_DELIMITED);
    head.uint32(resourceSpansLength);
    head.raw(this.resourceBytes);
    head.tag(2, LENGTH_DELIMITED);
    head.uint32(scopeSpansLength);
    head.raw(this.scopeBytes);
    const request = Buffer.allocUnsafe(head.pos + length + this.scopeSchemaBytes.length + this.resourceSchemaBytes.length);
    let at = head.buffer.copy(request, 0, 0, head.pos);
    const queued = this.queued;
    at += queued.buffer.copy(request, at, 0, length);
    at += this.scopeSchemaBytes.copy(request, at);
    this.resourceSchemaBytes.copy(request, at);
    queued.buffer.copyWithin(0, length, queued.pos);
    queued.pos -= length;
    return request;
  }
}
