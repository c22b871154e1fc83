// Benchmark collector: accepts OTLP/HTTP trace exports (POST /v1/traces), answers 200 at once and counts
// the spans, in its own process so that its CPU is not the gateway's. GET /stats answers the counts as JSON.
// It counts without decoding a span: ExportTraceServiceRequest { ResourceSpans resource_spans = 1 },
// ResourceSpans { ScopeSpans scope_spans = 2 }, ScopeSpans { Span spans = 2 } (opentelemetry-proto, trace/v1).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const stats = { exports: 0, spans: 0, bytes: 0, rejected: 0 };

/** Calls `each` with the bytes of every length-delimited field numbered `number` in `message`; skips the rest. */
function lengthDelimited(message: Buffer, number: number, each: (field: Buffer) => void): void {
  let offset = 0;
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = message[offset++];
      if (byte === undefined) throw new Error('truncated varint');
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return value;
      scale *= 128;
    }
  };
  while (offset < message.length) {
    const key = varint();
    const wire = key % 8;
    if (wire === 0) varint();
    else if (wire === 1) offset += 8;
    else if (wire === 5) offset += 4;
    else if (wire === 2) {
      const length = varint();
      if (Math.floor(key / 8) === number) each(message.subarray(offset, offset + length));
      offset += length;
    } else throw new Error(`protobuf wire type ${wire} not expected in OTLP traces`);
  }
  if (offset > message.length) throw new Error('truncated message');
}

function protobufSpans(body: Buffer): number {
  let count = 0;
  lengthDelimited(body, 1, (resourceSpans) =>
    lengthDelimited(resourceSpans, 2, (scopeSpans) =>
      lengthDelimited(scopeSpans, 2, () => {
        count++;
      }),
    ),
  );
  return count;
}

interface JsonExport {
  resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: unknown[] }> }>;
}

function jsonSpans(body: Buffer): number {
  const parsed = JSON.parse(body.toString('utf8')) as JsonExport;
  return (parsed.resourceSpans ?? []).reduce(
    (sum, resourceSpans) => sum + (resourceSpans.scopeSpans ?? []).reduce((inner, scope) => inner + (scope.spans?.length ?? 0), 0),
    0,
  );
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    const body = Buffer.concat(chunks);
    const json = (req.headers['content-type'] ?? '').startsWith('application/json');
    try {
      stats.spans += json ? jsonSpans(body) : protobufSpans(body);
      stats.exports++;
      stats.bytes += body.length;
    } catch {
      stats.rejected++;
      res.writeHead(400).end();
      return;
    }
    // An empty ExportTraceServiceResponse: full success.
    if (json) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
});

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
