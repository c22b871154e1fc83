// The gateway's span encodings against the SDK's serializers: a request's spans, written from its record,
// make the same request the SDK's serializer makes of them as ReadableSpans, byte for byte in protobuf,
// whatever the stages found, the ids, the times and the attribute values; JSON is the SDK's serializer itself.
// (otlp-proto-decode.test.ts holds the protobuf bytes to the OTLP .proto files.)
import { TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtobufSink, ProtobufSpans, Writer } from '../../../src/tracing/otlp-protobuf.ts';
import { jsonSpans, readableSpans } from '../../../src/tracing/readable-spans.ts';
import { type RateLimitOutcome, RequestSpans, type ServerArrival, type SpanTrace, newSpanIdWords, traceIdOf } from '../../../src/tracing/request-spans.ts';
import { AttributeKey, FixedAttributes } from '../../../src/tracing/span-description.ts';
import { noStageFacts } from '../../helpers/stage-facts.ts';

const resource = resourceFromAttributes({ 'service.name': 'petstore-gateway', 'service.version': '1.0.0', 'deployment.environment.name': 'staging' });
const scope = { name: 'petstore-gateway', version: '1.0.0' };

/** What a request's stages found, and when. */
interface Shape {
  /** The trace (its id in hex) and the arrival, together. */
  arrival: ServerArrival & Omit<SpanTrace, 'traceId' | 'traceFlags'> & { traceId: string };
  authenticate?: { keyCache?: 'hit' | 'miss'; lookupError?: string; result?: string };
  rateLimit?: { countsInRedis: boolean; outcome: RateLimitOutcome; onStoreError?: 'allow' | 'deny' };
  client?: { method: string; hostname: string; port: number; origin: string; path: string; status?: number; failure?: string };
  outcome: { statusCode: number; route?: string; operationId?: string; keyId?: string; errorCode?: string };
  /** Milliseconds since the epoch: each slot's start and end, in the order the record is written; 0 for an end leaves the stage running. */
  times: number[];
}

/** The spans of a request of this shape, built from its record's facts as the gateway builds them, with the shape's times. */
function recordOf(shape: Shape): RequestSpans {
  const { arrival } = shape;
  const times = [...shape.times];
  const next = () => times.shift() ?? 1_700_000_000_000;
  const { traceId, remoteParent, traceState, method, scheme, path, host } = arrival;
  const [serverHigh, serverLow] = newSpanIdWords();
  const [clientHigh, clientLow] = newSpanIdWords();
  const start = {
    trace: { traceId: traceIdOf(traceId), remoteParent, traceFlags: TraceFlags.SAMPLED, traceState },
    arrival: { method, scheme, path, host },
    serverHigh,
    serverLow,
    clientHigh,
    clientLow,
    startMs: next(),
  };
  const facts = noStageFacts();
  if (shape.authenticate) {
    const { keyCache, lookupError, result } = shape.authenticate;
    facts.authStartMs = next();
    facts.keyCache = keyCache;
    if (keyCache === 'miss') {
      facts.lookupStartMs = next();
      facts.lookupError = lookupError;
      facts.lookupEndMs = next();
    }
    facts.authResult = result;
    facts.authEndMs = next();
  }
  if (shape.rateLimit) {
    const { countsInRedis, outcome, onStoreError } = shape.rateLimit;
    facts.rateLimitStartMs = next();
    facts.rateLimitWaitedForRedis = countsInRedis;
    facts.rateLimitOutcome = outcome;
    if (onStoreError !== undefined) {
      facts.rateLimitStoreError = 'RateLimitStoreUnavailableError';
      facts.onStoreError = onStoreError;
    }
    facts.rateLimitEndMs = next();
  }
  if (shape.client) {
    const { method, hostname, port, origin, path, status, failure } = shape.client;
    facts.exchangeStartMs = next();
    facts.exchangeMethod = method;
    facts.exchangeOrigin = { hostname, port, origin };
    facts.exchangePath = path;
    facts.upstream = {
      ...(status === undefined ? {} : { status }),
      ...(failure === undefined ? {} : { failure: failure as 'reset' /* any word: the encodings write it as given */ }),
    };
    facts.exchangeEndMs = next();
  }
  const outcome = { route: undefined, operationId: undefined, keyId: undefined, errorCode: undefined, ...shape.outcome };
  return new RequestSpans(start, facts, outcome, next(), 0);
}

function protobufOf(requests: RequestSpans[]): string {
  const encoding = new ProtobufSpans(resource, scope);
  const queue: number[] = [];
  for (const request of requests) encoding.encode(request, queue);
  // The batch bounds its queue by the count: each request queues as many spans as it counts.
  expect(queue).toHaveLength(requests.reduce((spans, request) => spans + request.spanCount(), 0));
  return Buffer.from(encoding.request(queue)).toString('hex');
}

function sdkProtobufOf(requests: RequestSpans[]): string {
  return Buffer.from(ProtobufTraceSerializer.serializeRequest(requests.flatMap(readable))!).toString('hex');
}

function readable(request: RequestSpans): ReadableSpan[] {
  return readableSpans(request, resource, scope);
}

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const START = 1_764_000_000_123.456;

/** A request of the gateway's usual kind: continued from a client, a key cache miss, the exact store, an upstream 503. */
const USUAL: Shape = {
  arrival: {
    traceId: TRACE_ID,
    remoteParent: [0xb7ad6b71, 0x69203331],
    traceState: 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7',
    method: 'GET',
    scheme: 'http',
    path: '/v1/pets',
    host: { host: 'gateway.test', port: 8080 },
  },
  authenticate: { keyCache: 'miss', result: 'ok' },
  rateLimit: { countsInRedis: true, outcome: 'allowed' },
  client: { method: 'GET', hostname: '127.0.0.1', port: 4010, origin: 'http://127.0.0.1:4010', path: '/v1/pets', status: 503 },
  outcome: { statusCode: 503, route: '/v1/pets', operationId: 'listPets', keyId: 'key_0123456789ab' },
  times: [START, START + 0.1, START + 0.2, START + 0.5, START + 0.6, START + 0.7, START + 0.8, START + 1.2, START + 1.3, START + 1.4, START + 9.9, START + 10],
};

describe('OTLP/protobuf', () => {
  it("writes a request's spans as the SDK's serializer does, byte for byte", () => {
    const request = recordOf(USUAL);
    expect(request.spanCount()).toBe(6);
    expect(protobufOf([request])).toBe(sdkProtobufOf([request]));
  });

  it('takes the oldest queued spans for a request, and leaves the rest for the next', () => {
    const [first, second, third] = [recordOf(USUAL), recordOf(USUAL), recordOf(USUAL)] as const;
    const encoding = new ProtobufSpans(resource, scope);
    const queue: number[] = [];
    encoding.encode(first, queue);
    encoding.encode(second, queue);
    const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
    // One request and a span of the next: a batch need not end where a request does.
    expect(hex(encoding.request(queue.slice(0, 7)))).toBe(
      hex(ProtobufTraceSerializer.serializeRequest([...readable(first), ...readable(second).slice(0, 1)])!),
    );
    const rest = queue.slice(7);
    encoding.encode(third, rest);
    expect(hex(encoding.request(rest))).toBe(hex(ProtobufTraceSerializer.serializeRequest([...readable(second).slice(1), ...readable(third)])!));
  });

  it("leaves the queued bytes and lengths whole when a request's spans cannot be written", () => {
    const encoding = new ProtobufSpans(resource, scope);
    const queue: number[] = [];
    const first = recordOf(USUAL);
    encoding.encode(first, queue);
    // The SERVER span is written last: the request's other spans are written by then, and must be taken back.
    const broken = unreadable(recordOf(USUAL));
    expect(() => encoding.encode(broken, queue)).toThrow('unreadable');
    expect(queue).toHaveLength(6);
    const second = recordOf(USUAL);
    encoding.encode(second, queue);
    expect(Buffer.from(encoding.request(queue)).toString('hex')).toBe(sdkProtobufOf([first, second]));
  });

  it('writes many requests of different attribute values as the SDK does', () => {
    // 50 paths, key ids and statuses, every one twice.
    const requests = [0, 1].flatMap(() =>
      Array.from({ length: 50 }, (_, value) =>
        recordOf({
          ...USUAL,
          arrival: { ...USUAL.arrival, path: `/v1/pets/${value}` },
          outcome: { ...USUAL.outcome, statusCode: 200 + value, keyId: `key_${value}` },
        }),
      ),
    );
    expect(protobufOf(requests)).toBe(sdkProtobufOf(requests));
  });

  it('writes a span shorter than 128 bytes, and one longer than 16 KiB, as the SDK does', () => {
    const short = recordOf({
      arrival: { ...USUAL.arrival, remoteParent: undefined, traceState: undefined, path: '/', host: {} },
      outcome: { statusCode: 404 },
      times: [],
    });
    const long = recordOf({ ...USUAL, arrival: { ...USUAL.arrival, path: `/${'x'.repeat(20_000)}` } });
    expect(protobufOf([short, long])).toBe(sdkProtobufOf([short, long]));
  });

  it("writes spans that meet the end of the encoder's buffer as the SDK does, at every offset", () => {
    // A first request (its SERVER span alone) one byte longer each time starts the next request's first span
    // at every offset of the last 260 bytes of the encoder's first 4 KiB, so that each of its fields meets
    // the buffer's end (and the buffer grows) at every byte. The next request is a trace of the gateway's
    // own (no trace state), or one continued (with it).
    const fill = (pathLength: number) =>
      recordOf({ arrival: { ...USUAL.arrival, path: `/${'x'.repeat(pathLength - 1)}` }, outcome: { statusCode: 200 }, times: [] });
    const lengthOf = (request: RequestSpans) => {
      const queue: number[] = [];
      new ProtobufSpans(resource, scope).encode(request, queue);
      return queue[0]!;
    };
    const base = lengthOf(fill(3_700));
    const ownTrace: Shape = { ...USUAL, arrival: { ...USUAL.arrival, remoteParent: undefined, traceState: undefined } };
    for (const next of [ownTrace, USUAL])
      for (let start = 4_096 - 260; start <= 4_096; start++) {
        const first = fill(3_700 + start - base);
        expect(lengthOf(first)).toBe(start);
        const requests = [first, recordOf(next)];
        expect(protobufOf(requests)).toBe(sdkProtobufOf(requests));
      }
  });
});

describe("the protobuf encoder's attribute bytes (engaged)", () => {
  /** A sink writing into a fresh buffer, with a span begun. */
  function sinkWithSpan(): { sink: ProtobufSink; writer: Writer } {
    const sink = new ProtobufSink();
    const writer = new Writer();
    sink.writer = writer;
    sink.lengths = [];
    sink.begin(recordOf(USUAL), 'GET', 1, 1, 2, 3, 4, START, START + 1);
    return { sink, writer };
  }

  it("copies an attribute's bytes once they are kept, instead of writing its fields", () => {
    const key = new AttributeKey('http.request.method');
    // Bytes no field writer would make: seen in the output only if the kept bytes are what is copied.
    key.encoded.set('GET', Uint8Array.of(0xde, 0xad));
    const { sink, writer } = sinkWithSpan();
    const before = writer.pos;
    sink.attribute(key, 'GET');
    expect([...writer.buffer.subarray(before, writer.pos)]).toEqual([0xde, 0xad]);
  });

  it('keeps the bytes of a short value the first time it is written, and of a fixed set once', () => {
    const key = new AttributeKey('http.route');
    const fixed = new FixedAttributes({ 'db.system.name': 'redis' });
    const { sink } = sinkWithSpan();
    sink.attribute(key, '/v1/pets');
    sink.fixed(fixed);
    expect(key.encoded.get('/v1/pets')).toBeInstanceOf(Uint8Array);
    expect(fixed.encoded).toBeInstanceOf(Uint8Array);
  });
});

describe('OTLP/JSON', () => {
  it("is the SDK's JSON serializer over a batch of requests' spans, in the order they were handed over", () => {
    const requests = [recordOf(USUAL), recordOf({ ...USUAL, arrival: { ...USUAL.arrival, remoteParent: undefined, traceState: undefined } })];
    const encoding = jsonSpans(resource, scope);
    const queue: ReadableSpan[] = [];
    for (const request of requests) encoding.encode(request, queue);
    expect(queue).toHaveLength(12);
    expect(encoding.contentType).toBe('application/json');
    expect(Buffer.from(encoding.request(queue)).toString()).toBe(Buffer.from(JsonTraceSerializer.serializeRequest(requests.flatMap(readable))!).toString());
  });

  it("queues none of a request's spans when one cannot be made", () => {
    const queue: ReadableSpan[] = [];
    expect(() => jsonSpans(resource, scope).encode(unreadable(recordOf(USUAL)), queue)).toThrow('unreadable');
    expect(queue).toEqual([]);
  });
});

/** The request with an outcome that cannot be read: the SERVER span's, written last. */
function unreadable(request: RequestSpans): RequestSpans {
  request.outcome = Object.defineProperty({ ...request.outcome! }, 'statusCode', {
    get() {
      throw new Error('unreadable');
    },
  });
  return request;
}

const text = (maxLength: number) => fc.string({ unit: 'grapheme', maxLength });
const word = fc.stringMatching(/^[a-z_]{1,20}$/);
const hexId = (length: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`)).filter((id) => /[1-9a-f]/.test(id));
const epochMs = fc.double({ min: 1_000_000_000_000, max: 4_000_000_000_000, noNaN: true });
const shape: fc.Arbitrary<Shape> = fc.record(
  {
    arrival: fc.record({
      traceId: hexId(32),
      remoteParent: fc.option(fc.tuple(fc.nat(0xffffffff), fc.nat(0xffffffff)), { nil: undefined }),
      // As the gateway keeps one: checked, each key once (src/http/trace-context.ts).
      traceState: fc.option(
        fc.stringMatching(/^[a-z]{1,8}=[a-z0-9]{1,16}(,[a-z]{1,8}=[a-z0-9]{1,16}){0,3}$/).map((list) => new TraceState(list).serialize()),
        { nil: undefined },
      ),
      method: fc.constantFrom('GET', 'POST', 'DELETE', 'HEAD', 'BREW', 'get'),
      scheme: fc.constantFrom('http' as const, 'https' as const),
      path: text(200),
      host: fc.record({ host: text(40), port: fc.nat(65535) }, { requiredKeys: [] }),
    }),
    authenticate: fc.record(
      {
        keyCache: fc.constantFrom('hit' as const, 'miss' as const),
        lookupError: word,
        result: fc.constantFrom('ok', 'unknown', 'revoked', 'store_unavailable', 'missing'),
      },
      { requiredKeys: [] },
    ),
    rateLimit: fc.record(
      {
        countsInRedis: fc.boolean(),
        outcome: fc.constantFrom<RateLimitOutcome>('allowed', 'limited', 'quota_exceeded', 'store_unavailable', 'failed'),
        onStoreError: fc.constantFrom('allow' as const, 'deny' as const),
      },
      { requiredKeys: ['countsInRedis', 'outcome'] },
    ),
    client: fc.record(
      {
        method: fc.constantFrom('GET', 'POST', 'DELETE'),
        hostname: text(40),
        port: fc.nat(65535),
        origin: text(60),
        path: text(200),
        status: fc.integer({ min: 0, max: 599 }),
        failure: word,
      },
      { requiredKeys: ['method', 'hostname', 'port', 'origin', 'path'] },
    ),
    outcome: fc.record(
      { statusCode: fc.integer({ min: 100, max: 599 }), route: text(80), operationId: word, keyId: text(40), errorCode: word },
      { requiredKeys: ['statusCode'] },
    ),
    times: fc.array(fc.oneof(epochMs, fc.constant(0)), { maxLength: 14 }),
  },
  { requiredKeys: ['arrival', 'outcome', 'times'] },
);

describe("any request's spans", () => {
  it('encode in protobuf byte for byte as the SDK does', () => {
    fc.assert(
      fc.property(fc.array(shape, { minLength: 1, maxLength: 3 }), (shapes) => {
        const requests = shapes.map(recordOf);
        expect(protobufOf(requests)).toBe(sdkProtobufOf(requests));
      }),
      { numRuns: 300 },
    );
  });
});
