// The gateway's span encodings against the SDK's serializers: the same spans make the same request, byte for
// byte in protobuf, the same document in JSON, whatever the attributes, events, links and status.
import { type Attributes, type AttributeValue, ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, type ReadableSpan } from '@opentelemetry/sdk-trace';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LeanTracer } from '../../../src/tracing/lean-tracer.ts';
import { JsonSpans } from '../../../src/tracing/otlp-json.ts';
import { ProtobufSpans } from '../../../src/tracing/otlp-protobuf.ts';

const resource = resourceFromAttributes({ 'service.name': 'petstore-gateway', 'service.version': '1.0.0', 'deployment.environment.name': 'staging' });
const scope = { name: 'petstore-gateway', version: '1.0.0' };

/** Spans as the gateway makes them: a LeanTracer whose ended spans are collected. */
function spansFrom(make: (tracer: LeanTracer) => void): ReadableSpan[] {
  const ended: ReadableSpan[] = [];
  make(new LeanTracer(resource, scope, new AlwaysOnSampler(), { onEnd: (span) => ended.push(span) }));
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

/** A request's four spans, as the gateway's stages end them. */
function requestSpans(): ReadableSpan[] {
  return spansFrom((tracer) => {
    const server = tracer.startSpan('GET', { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'GET', 'url.path': '/v1/pets' } }, REMOTE_PARENT);
    const parent = trace.setSpan(ROOT_CONTEXT, server);
    tracer.startSpan('authenticate', { attributes: { 'gateway.auth.key_cache': 'hit' } }, parent).end();
    tracer.startSpan('rate_limit', {}, parent).end();
    const client = tracer.startSpan('GET', { kind: SpanKind.CLIENT, attributes: { 'server.port': 4010 } }, parent);
    client.setAttribute('http.response.status_code', 503);
    client.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream_unavailable' });
    client.end();
    server.updateName('GET /v1/pets');
    server.end();
  });
}

describe('OTLP/protobuf', () => {
  it("writes a request's spans as the SDK's serializer does, byte for byte", () => {
    const spans = requestSpans();
    expect(protobufOf(spans).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'));
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
