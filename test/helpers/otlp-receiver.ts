// A small OTLP/HTTP trace receiver on a free port: decodes what the SDK's exporters send, as JSON or protobuf.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  traceState: string;
  name: string;
  /** OTLP's SpanKind: 2 SERVER, 3 CLIENT. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  resource: Record<string, string | number | boolean>;
}

export interface OtlpReceiver {
  /** The base address, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** The Content-Type of every export request received. */
  contentTypes: string[];
  /** The headers of every export request received, as Node parsed them. */
  requestHeaders: IncomingHttpHeaders[];
  /** Resolves once at least `count` spans arrived. */
  waitForSpans(count: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const requestHeaders: IncomingHttpHeaders[] = [];
  const waiting: Array<{ count: number; resolve: (spans: ReceivedSpan[]) => void }> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received = Buffer.concat(chunks);
      // OTEL_EXPORTER_OTLP_COMPRESSION=gzip: the exporter compresses the body, as a collector accepts it.
      const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(received) : received;
      const type = req.headers['content-type'] ?? '';
      contentTypes.push(type);
      requestHeaders.push(req.headers);
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      spans.push(...(type.startsWith('application/json') ? fromJson(JSON.parse(body.toString('utf8'))) : fromProtobuf(body)));
      for (const waiter of [...waiting]) {
        if (spans.length >= waiter.count) {
          waiting.splice(waiting.indexOf(waiter), 1);
          waiter.resolve(spans);
        }
      }
      // An empty ExportTraceServiceResponse: full success.
      if (type.startsWith('application/json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    requestHeaders,
    waitForSpans: (count) => (spans.length >= count ? Promise.resolve(spans) : new Promise((resolve) => waiting.push({ count, resolve }))),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// --- OTLP/JSON (ids are hex, enums numbers, 64-bit integers strings) ---

interface JsonValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
}
type JsonAttributes = Array<{ key: string; value: JsonValue }> | undefined;

function jsonAttributes(attributes: JsonAttributes): Record<string, string | number | boolean> {
  const result: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? []) {
    result[key] = value.stringValue ?? value.boolValue ?? (value.intValue === undefined ? value.doubleValue! : Number(value.intValue));
  }
  return result;
}

interface JsonExport {
  resourceSpans?: Array<{
    resource?: { attributes?: JsonAttributes };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        traceState?: string;
        name: string;
        kind: number;
        attributes?: JsonAttributes;
        status?: { code?: number; message?: string };
      }>;
    }>;
  }>;
}

function fromJson(body: JsonExport): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = jsonAttributes(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        traceState: span.traceState ?? '',
        name: span.name,
        kind: span.kind,
        attributes: jsonAttributes(span.attributes),
        status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
        resource,
      })),
    );
  });
}

// --- OTLP/protobuf: the wire format read by field number (opentelemetry-proto, trace/v1 and common/v1) ---

type Field = { number: number; wire: number; value: bigint | Buffer };

/** The fields of one message, in order; varints as bigint, fixed64 as bigint, length-delimited as bytes. */
function fields(buffer: Buffer): Field[] {
  const result: Field[] = [];
  let offset = 0;
  const varint = (): bigint => {
    let value = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buffer[offset++]!;
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
      shift += 7n;
    }
  };
  while (offset < buffer.length) {
    const key = Number(varint());
    const number = key >>> 3;
    const wire = key & 7;
    if (wire === 0) result.push({ number, wire, value: varint() });
    else if (wire === 1) {
      result.push({ number, wire, value: buffer.readBigUInt64LE(offset) });
      offset += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      result.push({ number, wire, value: buffer.subarray(offset, offset + length) });
      offset += length;
    } else if (wire === 5) {
      result.push({ number, wire, value: BigInt(buffer.readUInt32LE(offset)) });
      offset += 4;
    } else throw new Error(`protobuf wire type ${wire} not expected in OTLP traces`);
  }
  return result;
}

const bytesOf = (message: Buffer, number: number): Buffer[] =>
  fields(message)
    .filter((field) => field.number === number)
    .map((field) => field.value as Buffer);
const one = (message: Buffer, number: number): Field | undefined => fields(message).find((field) => field.number === number);
const text = (message: Buffer, number: number): string => ((one(message, number)?.value as Buffer | undefined) ?? Buffer.alloc(0)).toString('utf8');
const hex = (message: Buffer, number: number): string => ((one(message, number)?.value as Buffer | undefined) ?? Buffer.alloc(0)).toString('hex');
const integer = (message: Buffer, number: number): number => Number((one(message, number)?.value as bigint | undefined) ?? 0n);

/** KeyValue { key = 1; AnyValue value = 2 }, AnyValue { string 1; bool 2; int64 3; double 4 }. */
function protobufAttributes(messages: Buffer[]): Record<string, string | number | boolean> {
  const result: Record<string, string | number | boolean> = {};
  for (const keyValue of messages) {
    const value = (one(keyValue, 2)?.value as Buffer | undefined) ?? Buffer.alloc(0);
    const [field] = fields(value);
    if (field === undefined) continue;
    if (field.number === 1) result[text(keyValue, 1)] = (field.value as Buffer).toString('utf8');
    else if (field.number === 2) result[text(keyValue, 1)] = field.value === 1n;
    else if (field.number === 3) result[text(keyValue, 1)] = Number(BigInt.asIntN(64, field.value as bigint));
    else if (field.number === 4) {
      const bits = Buffer.alloc(8);
      bits.writeBigUInt64LE(field.value as bigint);
      result[text(keyValue, 1)] = bits.readDoubleLE(0);
    }
  }
  return result;
}

/**
 * ExportTraceServiceRequest { ResourceSpans resource_spans = 1 }; ResourceSpans { Resource resource = 1;
 * ScopeSpans scope_spans = 2 }; Resource { KeyValue attributes = 1 }; ScopeSpans { Span spans = 2 };
 * Span { trace_id 1; span_id 2; trace_state 3; parent_span_id 4; name 5; kind 6; attributes 9; Status status 15 };
 * Status { message 2; code 3 }.
 */
function fromProtobuf(body: Buffer): ReceivedSpan[] {
  return bytesOf(body, 1).flatMap((resourceSpans) => {
    const resourceMessage = bytesOf(resourceSpans, 1)[0] ?? Buffer.alloc(0);
    const resource = protobufAttributes(bytesOf(resourceMessage, 1));
    return bytesOf(resourceSpans, 2).flatMap((scopeSpans) =>
      bytesOf(scopeSpans, 2).map((span) => {
        const status = bytesOf(span, 15)[0] ?? Buffer.alloc(0);
        return {
          traceId: hex(span, 1),
          spanId: hex(span, 2),
          parentSpanId: hex(span, 4),
          traceState: text(span, 3),
          name: text(span, 5),
          kind: integer(span, 6),
          attributes: protobufAttributes(bytesOf(span, 9)),
          status: { code: integer(status, 3), message: text(status, 2) },
          resource,
        };
      }),
    );
  });
}
