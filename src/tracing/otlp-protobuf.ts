// OTLP/protobuf for a request's spans: their bytes are written once the request completes, and a batch's
// request is those bytes between its resource and scope (the layout of the SDK's serializer, byte for byte).
import { type Attributes, type AttributeValue, SpanKind, type SpanStatus } from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { RequestSpans } from './request-spans.ts';
import { type AttributeKey, describeSpans, type FixedAttributes, type SpanSink } from './span-description.ts';
import type { SpanEncoding } from './span-batch.ts';

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

/**
 * A protobuf writer over one reusable buffer that grows as needed. A nested message reserves one byte for
 * its length and moves its body when the length needs more (as the SDK's writer does): most are short.
 */
export class Writer {
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
    writer.tag(field, LENGTH_DELIMITED);
    writeKeyValue(writer, key, attributes[key]);
  }
}

/** Span.attributes' field number. */
const SPAN_ATTRIBUTES = 9;

/** Span.flags: the W3C trace flags, and whether the parent is known to be remote (the SDK's bits 8 and 9). */
function spanFlags(traceFlags: number, isRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | FLAGS_HAS_IS_REMOTE | (isRemote ? FLAGS_IS_REMOTE : 0);
}

/** A span id from the two 32-bit words the record keeps (big-endian, as its hex reads), tagged and sized. */
function writeSpanId(writer: Writer, field: number, high: number, low: number): void {
  writer.tag(field, LENGTH_DELIMITED);
  writer.uint32(8);
  writer.ensure(8);
  writer.pos = putWordBE(writer.buffer, putWordBE(writer.buffer, writer.pos, high), low);
}

/** Milliseconds since the epoch as a fixed64 of nanoseconds, tagged. */
function writeTime(writer: Writer, field: number, ms: number): void {
  writer.tag(field, FIXED64);
  writer.ensure(8);
  writer.pos = putMsLE(writer.buffer, writer.pos, ms);
}

/**
 * How many values of one key keep their encoded bytes (AttributeKey.encoded), short scalars only: most
 * of a request's attributes are the same pair on every request (`http.request.method` GET, the route,
 * status 200), so their bytes (tag, length, KeyValue) are copied, not written a field at a time. A key
 * of many values (`url.path`) keeps its first few and takes no more room. Counted under callgrind
 * (a bench-like request's five spans encoded in a loop), writing every attribute plainly costs 23,400
 * instructions a request more, about 6% of the traced gateway's: the one refinement of this encoder
 * kept (the fixed fields once written in place saved 7,000, under 2%, and went). Held to the OTLP .proto
 * and to the SDK's bytes by the encoder's tests, and to being used by its engaged test.
 */
const ENCODED_VALUES_PER_KEY = 32;

/** A span attribute's bytes: tag, length, KeyValue. */
function encodedAttribute(writer: Writer, key: string, value: AttributeValue): Buffer {
  writer.pos = 0;
  writer.tag(SPAN_ATTRIBUTES, LENGTH_DELIMITED);
  writeKeyValue(writer, key, value);
  return Buffer.from(writer.buffer.subarray(0, writer.pos));
}

/**
 * Writes the spans `describeSpans` gives as ScopeSpans entries (tag, length, Span message), each field as
 * the SDK's serializer writes it, in its order; attributes met before from their bytes. Exported for the
 * test that the attribute bytes are reused (test/unit/tracing/otlp-encoding.test.ts).
 */
export class ProtobufSink implements SpanSink {
  /** Where each span's bytes go, and each span's length. */
  writer!: Writer;
  lengths!: number[];
  private spanAt = 0;
  private lengthAt = 0;
  private traceFlags = 0;
  private parentIsRemote = false;
  /** For pairs met the first time. */
  private readonly scratch = new Writer();

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
    const writer = this.writer;
    this.spanAt = writer.pos;
    this.traceFlags = request.traceFlags;
    // Only the SERVER span has a parent not of the gateway's: the client's.
    this.parentIsRemote = kind === SpanKind.SERVER && parentHigh !== -1;
    writer.tag(2, LENGTH_DELIMITED);
    this.lengthAt = writer.begin();
    writer.tag(1, LENGTH_DELIMITED);
    writer.bytes(request.traceId.bytes);
    writeSpanId(writer, 2, high, low);
    if (request.traceState) {
      writer.tag(3, LENGTH_DELIMITED);
      writer.string(request.traceState);
    }
    if (parentHigh !== -1) writeSpanId(writer, 4, parentHigh, parentLow);
    writer.tag(5, LENGTH_DELIMITED);
    writer.string(name);
    writer.tag(6, VARINT);
    writer.uint32(kind + 1);
    writeTime(writer, 7, startMs);
    writeTime(writer, 8, Math.max(startMs, endMs));
  }

  fixed(attributes: FixedAttributes): void {
    if (attributes.encoded === undefined) {
      const writer = this.scratch;
      writer.pos = 0;
      for (const [key, value] of attributes.pairs) {
        writer.tag(SPAN_ATTRIBUTES, LENGTH_DELIMITED);
        writeKeyValue(writer, key, value);
      }
      attributes.encoded = Buffer.from(writer.buffer.subarray(0, writer.pos));
    }
    this.writer.raw(attributes.encoded);
  }

  attribute(key: AttributeKey, value: AttributeValue): void {
    let bytes = key.encoded.get(value);
    if (bytes === undefined) {
      if (
        key.encoded.size >= ENCODED_VALUES_PER_KEY ||
        !(typeof value === 'number' || typeof value === 'boolean' || (typeof value === 'string' && value.length <= 64))
      ) {
        this.writer.tag(SPAN_ATTRIBUTES, LENGTH_DELIMITED);
        writeKeyValue(this.writer, key.name, value);
        return;
      }
      bytes = encodedAttribute(this.scratch, key.name, value);
      key.encoded.set(value, bytes);
    }
    this.writer.raw(bytes);
  }

  end(status: SpanStatus): void {
    const writer = this.writer;
    // The gateway's spans drop nothing and have no events or links: their counts are 0 (the SDK writes them).
    for (const field of [10, 12, 14]) {
      writer.tag(field, VARINT);
      writer.uint32(0);
    }
    writer.tag(15, LENGTH_DELIMITED);
    const statusAt = writer.begin();
    if (status.message) {
      writer.tag(2, LENGTH_DELIMITED);
      writer.string(status.message);
    }
    writer.tag(3, VARINT);
    writer.uint32(status.code);
    writer.end(statusAt);
    writer.tag(16, FIXED32);
    writer.fixed32(spanFlags(this.traceFlags, this.parentIsRemote));
    writer.end(this.lengthAt);
    this.lengths.push(writer.pos - this.spanAt);
  }
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
 * Encodes spans for an OTLP/HTTP protobuf export: `encode` a request's as it completes, `request` for a batch
 * of them. A span's bytes are appended to one buffer that holds every queued span (oldest first) and the
 * queue keeps only its length: no object per span outlives the request that made it, which is what kept the
 * garbage collector busy (docs/decisions/0019-spans-queued-as-bytes.md). `request` takes the oldest spans' bytes off the front.
 */
export class ProtobufSpans implements SpanEncoding<RequestSpans, number> {
  readonly contentType = 'application/x-protobuf';
  /** The queued spans' bytes, each a ScopeSpans entry (tag, length, Span message), oldest first. */
  private readonly queued = new Writer();
  private readonly sink = new ProtobufSink();
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

  /** A request's spans: each one's bytes appended to the queued ones, its length to `queue` (what the batch keeps). */
  encode(request: RequestSpans, queue: number[]): void {
    const sink = this.sink;
    const start = this.queued.pos;
    const queued = queue.length;
    sink.writer = this.queued;
    sink.lengths = queue;
    try {
      describeSpans(request, sink);
    } catch (error) {
      // Spans half written are no spans: the queued bytes and lengths stay whole.
      this.queued.pos = start;
      queue.length = queued;
      throw error;
    }
  }

  count(request: RequestSpans): number {
    return request.spanCount();
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
