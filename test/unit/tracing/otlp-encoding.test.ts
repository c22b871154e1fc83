// The gateway's span encodings against the SDK's serializers: the same spans make the same request, byte for
// byte in protobuf, the same document in JSON, whatever the attributes, events, links and status.
import { type Attributes, type AttributeValue, ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, type ReadableSpan } from '@opentelemetry/sdk-trace';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LeanSpan, LeanTracer } from '../../../src/tracing/lean-tracer.ts';
import { JsonSpans } from '../../../src/tracing/otlp-json.ts';
import { ProtobufSpans } from '../../../src/tracing/otlp-protobuf.ts';

const resource = resourceFromAttributes({ 'service.name': 'petstore-gateway', 'service.version': '1.0.0', 'deployment.environment.name': 'staging' });
const scope = { name: 'petstore-gateway', version: '1.0.0' };

/** Spans as the gateway makes them: a LeanTracer whose ended spans are collected. */
function spansFrom(make: (tracer: LeanTracer) => void): ReadableSpan[] {
  const ended: ReadableSpan[] = [];
  make(new LeanTracer(resource, scope, new AlwaysOnSampler(), { onEnd: (span) => ended.push(span) }, { childrenFollowParent: true }));
  return ended;
}

function protobufOf(spans: ReadableSpan[]): Buffer {
  const encoding = new ProtobufSpans(resource, scope);
  return Buffer.from(encoding.request(spans.map((span) => encoding.span(span))));
}

function jsonOf(spans: ReadableSpan[]): unknown {
  const encoding = new JsonSpans(resource, scope);
  return JSON.parse(Buffer.from(encoding.request(spans.map((span) => encoding.span(span)))).toString());
}

function sdkJsonOf(spans: ReadableSpan[]): unknown {
  return JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans)!).toString());
}

const REMOTE_PARENT = trace.setSpanContext(ROOT_CONTEXT, {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
  traceState: new TraceState('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7'),
});

/** A request's five spans, as the gateway's stages make and end them. */
function requestSpans(): ReadableSpan[] {
  return spansFrom(makeRequest);
}

function makeRequest(tracer: LeanTracer): void {
  const server = tracer.startSpan('GET', { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'GET', 'url.path': '/v1/pets' } }, REMOTE_PARENT);
  if (!(server instanceof LeanSpan)) throw new Error('the SERVER span is recorded');
  tracer.startChild(server, 'authenticate', SpanKind.INTERNAL, { 'gateway.auth.key_cache': 'hit' }).end();
  const rateLimit = tracer.startChild(server, 'rate_limit', SpanKind.INTERNAL);
  if (!(rateLimit instanceof LeanSpan)) throw new Error('the rate_limit span is recorded');
  tracer.startChild(rateLimit, 'redis', SpanKind.CLIENT, { 'db.system.name': 'redis' }).end();
  rateLimit.end();
  const client = tracer.startChild(server, 'GET', SpanKind.CLIENT, { 'server.port': 4010 });
  client.setAttribute('http.response.status_code', 503);
  client.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream_unavailable' });
  client.end();
  server.updateName('GET /v1/pets');
  server.end();
}

describe('OTLP/protobuf', () => {
  it("writes a request's spans as the SDK's serializer does, byte for byte", () => {
    const spans = requestSpans();
    expect(protobufOf(spans).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'));
  });

  it('takes the oldest queued spans for a request, and leaves the rest for the next', () => {
    // One tracer, as in the gateway: the SDK's serializer groups spans by their scope object.
    const spans = spansFrom((tracer) => {
      for (let request = 0; request < 3; request++) makeRequest(tracer);
    });
    const [first, second, third] = [spans.slice(0, 5), spans.slice(5, 10), spans.slice(10)];
    const encoding = new ProtobufSpans(resource, scope);
    const queued = [...first, ...second].map((span) => encoding.span(span));
    const sdk = (batch: ReadableSpan[]) => Buffer.from(ProtobufTraceSerializer.serializeRequest(batch)!).toString('hex');
    expect(Buffer.from(encoding.request(queued.slice(0, first.length))).toString('hex')).toBe(sdk(first));
    const more = third.map((span) => encoding.span(span));
    expect(Buffer.from(encoding.request([...queued.slice(first.length), ...more])).toString('hex')).toBe(sdk([...second, ...third]));
  });

  it('leaves the queued bytes whole when a span cannot be written', () => {
    const [first, second] = requestSpans();
    const encoding = new ProtobufSpans(resource, scope);
    const queued = [encoding.span(first!)];
    const broken = Object.create(second!, {
      attributes: {
        get() {
          throw new Error('unreadable');
        },
      },
    }) as ReadableSpan;
    expect(() => encoding.span(broken)).toThrow('unreadable');
    queued.push(encoding.span(second!));
    expect(Buffer.from(encoding.request(queued)).toString('hex')).toBe(
      Buffer.from(ProtobufTraceSerializer.serializeRequest([first!, second!])!).toString('hex'),
    );
  });

  it('writes an attribute met before as the SDK does, past the bounds of what is kept encoded too', () => {
    // 100 keys of 50 values each, every pair twice: more keys and values than are kept as bytes.
    const spans = spansFrom((tracer) => {
      for (let round = 0; round < 2; round++)
        for (let value = 0; value < 50; value++) {
          const attributes: Attributes = {};
          for (let key = 0; key < 100; key++) attributes[`gateway.test.${key}`] = key % 3 === 0 ? value : key % 3 === 1 ? `value-${value}` : value % 2 === 0;
          tracer.startSpan('GET', { kind: SpanKind.SERVER, attributes }, ROOT_CONTEXT).end();
        }
    });
    expect(protobufOf(spans).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'));
  });

  it('writes a span shorter than 128 bytes, and one longer than 16 KiB, as the SDK does', () => {
    const spans = spansFrom((tracer) => {
      tracer.startSpan('a', { root: true }, ROOT_CONTEXT).end();
      tracer.startSpan('b', { attributes: { 'gateway.test.long': 'x'.repeat(20_000) } }, ROOT_CONTEXT).end();
    });
    expect(protobufOf(spans).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'));
  });

  it("writes spans whose fixed fields meet the end of the encoder's buffer as the SDK does, at every offset", () => {
    // A first span one byte longer each time puts the next spans' ids, times and status across the end of
    // the encoder's first 4 KiB at every offset: those fields are written in room made for them at once.
    // The next spans are a trace of the gateway's own (no trace state), or one continued (with it).
    const ownTrace = (tracer: LeanTracer) => {
      const server = tracer.startSpan('GET', { kind: SpanKind.SERVER }, ROOT_CONTEXT);
      if (!(server instanceof LeanSpan)) throw new Error('the SERVER span is recorded');
      tracer.startChild(server, 'authenticate', SpanKind.INTERNAL).end();
      server.end();
    };
    for (const next of [ownTrace, makeRequest])
      for (let shift = 0; shift < 120; shift++) {
        const spans = spansFrom((tracer) => {
          tracer.startSpan('fill', { attributes: { 'gateway.test.fill': 'x'.repeat(3_900 + shift) } }, ROOT_CONTEXT).end();
          next(tracer);
        });
        expect(protobufOf(spans).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'));
      }
  });

  it('writes a batch of one span as the SDK does', () => {
    const [span] = requestSpans();
    expect(protobufOf([span!]).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest([span!])!))).toBe(true);
  });
});

describe('OTLP/JSON', () => {
  it("writes a request's spans as the SDK's serializer does", () => {
    const spans = requestSpans();
    expect(jsonOf(spans)).toEqual(sdkJsonOf(spans));
  });
});

const attributeValue: fc.Arbitrary<AttributeValue> = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 300 }),
  fc.boolean(),
  fc.integer(),
  fc.maxSafeInteger(),
  fc.double({ noNaN: false }),
  fc.array(fc.string({ maxLength: 20 }), { maxLength: 4 }),
  fc.array(fc.integer(), { maxLength: 4 }),
  fc.array(fc.option(fc.boolean(), { nil: null }), { maxLength: 4 }),
);
const attributes: fc.Arbitrary<Attributes> = fc.dictionary(fc.string({ minLength: 1, maxLength: 40 }), attributeValue, { maxKeys: 12 });
const hexId = (length: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`)).filter((id) => /[1-9a-f]/.test(id));
const spanShape = fc.record({
  name: fc.string({ unit: 'grapheme', maxLength: 200 }),
  kind: fc.constantFrom(SpanKind.INTERNAL, SpanKind.SERVER, SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER),
  attributes,
  events: fc.array(fc.record({ name: fc.string({ maxLength: 30 }), attributes, at: fc.integer({ min: 0, max: 2 ** 40 }) }), { maxLength: 3 }),
  links: fc.array(fc.record({ traceId: hexId(32), spanId: hexId(16), sampled: fc.boolean(), attributes }), { maxLength: 2 }),
  status: fc.constantFrom(
    { code: SpanStatusCode.UNSET },
    { code: SpanStatusCode.OK },
    { code: SpanStatusCode.ERROR },
    { code: SpanStatusCode.ERROR, message: 'upstream_timeout' },
  ),
  remoteParent: fc.boolean(),
  duration: fc.integer({ min: 0, max: 120_000 }),
});

type SpanShape = typeof spanShape extends fc.Arbitrary<infer Shape> ? Shape : never;

/** The spans of these shapes, from one tracer (the SDK groups a batch by its tracer's scope). */
function spansOf(shapes: SpanShape[]): ReadableSpan[] {
  return spansFrom((tracer) => {
    for (const shape of shapes) {
      const started = tracer.startSpan(shape.name, { kind: shape.kind, attributes: shape.attributes }, shape.remoteParent ? REMOTE_PARENT : ROOT_CONTEXT);
      for (const event of shape.events) started.addEvent(event.name, event.attributes, event.at);
      for (const link of shape.links)
        started.addLink({
          context: { traceId: link.traceId, spanId: link.spanId, traceFlags: link.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE },
          attributes: link.attributes,
        });
      started.setStatus(shape.status);
      started.end(Date.now() + shape.duration);
    }
  });
}

describe('any span the API lets a stage make', () => {
  it('encodes in protobuf byte for byte as the SDK does', () => {
    fc.assert(
      fc.property(fc.array(spanShape, { minLength: 1, maxLength: 4 }), (shapes) => {
        const spans = spansOf(shapes);
        expect(protobufOf(spans).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'));
      }),
      { numRuns: 300 },
    );
  });

  it('encodes in JSON as the SDK does', () => {
    fc.assert(
      fc.property(fc.array(spanShape, { minLength: 1, maxLength: 4 }), (shapes) => {
        const spans = spansOf(shapes);
        expect(jsonOf(spans)).toEqual(sdkJsonOf(spans));
      }),
      { numRuns: 300 },
    );
  });
});
