// A request's spans as the gateway records them: which requests have them, how the stages' spans and the
// CLIENT span join the SERVER span, and the samplers OTEL_TRACES_SAMPLER names against the shortcut the
// stages take (their spans recorded and sampled as the SERVER span, with nothing of their own from the sampler).
import type { IncomingMessage } from 'node:http';
import { ROOT_CONTEXT, SamplingDecision, SpanKind, SpanStatusCode, TraceFlags, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, type ReadableSpan, type Sampler } from '@opentelemetry/sdk-trace';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { samplerFrom } from '../../../src/tracing/from-environment.ts';
import { readableSpans } from '../../../src/tracing/readable-spans.ts';
import type { RateLimitOutcome, RequestSpans } from '../../../src/tracing/request-spans.ts';
import { recordingTracing, type TraceSlice, type Tracing } from '../../../src/tracing/tracer.ts';

const resource = resourceFromAttributes({ 'service.name': 'petstore-gateway' });
const scope = { name: 'petstore-gateway', version: '1.0.0' };

function tracingWith(sampler: Sampler): { tracing: Tracing; completed: RequestSpans[] } {
  const completed: RequestSpans[] = [];
  const tracing = recordingTracing(sampler, { onEnd: (spans) => completed.push(spans) }, { shutdown: () => Promise.resolve(), droppedSpans: () => 0 });
  return { tracing, completed };
}

/** A request as the tracing reads one on arrival: its method, headers and socket. */
function arriving(headers: Record<string, string> = {}): IncomingMessage {
  return { method: 'GET', headers: { host: 'gateway.test:8080', ...headers }, socket: {} } as unknown as IncomingMessage;
}

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const OK = { statusCode: 200, route: '/v1/pets', operationId: 'listPets', keyId: 'key_0123456789ab', errorCode: undefined };

/** The stages of a request that passed, as they write their spans. */
function passThrough(tracing: Tracing, slice: TraceSlice): string {
  const spans = slice.spans!;
  spans.startAuthenticate();
  spans.keyCacheAnswered('miss');
  spans.endLookup();
  spans.endAuthenticate('ok');
  spans.startRateLimit(true);
  spans.endRateLimit('allowed');
  const exchange = tracing.startExchange(slice, 'GET', 'http://user:secret@backend.test:4010/v1/pets?limit=5');
  exchange.end({ status: 200 });
  tracing.end(slice, OK);
  return exchange.traceparent;
}

function byName(spans: readonly ReadableSpan[]): Record<string, ReadableSpan> {
  return Object.fromEntries(
    spans.map((span) => [span.kind === SpanKind.CLIENT && span.name === 'redis' ? `redis ${span.attributes['gateway.redis.command']}` : span.name, span]),
  );
}

describe('recorded spans', () => {
  it("hands a sampled request's spans on when it completes, once", () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    const slice = tracing.begin(arriving(), '/v1/pets');
    expect(slice.sampled).toBe(true);
    tracing.end(slice, OK);
    tracing.end(slice, OK);
    expect(completed).toEqual([slice.spans]);
  });

  it("continues the client's trace: the SERVER span its child, the stages' and the CLIENT span the SERVER span's", () => {
    const { tracing, completed } = tracingWith(new ParentBasedSampler({ root: new AlwaysOnSampler() }));
    const slice = tracing.begin(arriving({ traceparent: TRACEPARENT, tracestate: 'rojo=00f067aa0ba902b7' }), '/v1/pets');
    const traceparent = passThrough(tracing, slice);
    const spans = byName(readableSpans(completed[0]!, resource, scope));
    expect(Object.keys(spans)).toEqual(['redis key_lookup', 'authenticate', 'redis rate_limit_increment', 'rate_limit', 'GET', 'GET /v1/pets']);
    const server = spans['GET /v1/pets']!;
    expect(server.spanContext()).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: slice.spanId, traceFlags: TraceFlags.SAMPLED });
    expect(server.spanContext().traceState?.serialize()).toBe('rojo=00f067aa0ba902b7');
    expect(server.parentSpanContext).toMatchObject({ spanId: 'b7ad6b7169203331', isRemote: true });
    for (const name of ['authenticate', 'rate_limit', 'GET']) expect(spans[name]!.parentSpanContext).toMatchObject({ spanId: slice.spanId });
    expect(spans['redis key_lookup']!.parentSpanContext?.spanId).toBe(spans.authenticate!.spanContext().spanId);
    expect(spans['redis rate_limit_increment']!.parentSpanContext?.spanId).toBe(spans.rate_limit!.spanContext().spanId);
    expect(traceparent).toBe(`00-0af7651916cd43dd8448eb211c80319c-${spans.GET!.spanContext().spanId}-01`);
    expect(spans.GET!.attributes).toEqual({
      'http.request.method': 'GET',
      'server.address': 'backend.test',
      'server.port': 4010,
      'url.full': 'http://backend.test:4010/v1/pets',
      'http.response.status_code': 200,
    });
    expect(new Set(Object.values(spans).map((span) => span.spanContext().spanId)).size).toBe(6);
  });

  it('records nothing of a trace its client did not sample, and tells the upstream so', () => {
    const { tracing, completed } = tracingWith(new ParentBasedSampler({ root: new AlwaysOnSampler() }));
    const slice = tracing.begin(arriving({ traceparent: TRACEPARENT.replace(/01$/, '00') }), '/v1/pets');
    expect(slice).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', sampled: false, spans: undefined });
    expect(tracing.startExchange(slice, 'GET', 'http://backend.test/v1/pets').traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-00$/);
    tracing.end(slice, OK);
    expect(completed).toEqual([]);
  });

  it('records nothing under always_off', () => {
    const { tracing, completed } = tracingWith(new AlwaysOffSampler());
    const slice = tracing.begin(arriving(), '/v1/pets');
    expect(slice.spans).toBeUndefined();
    tracing.end(slice, OK);
    expect(completed).toEqual([]);
  });

  it('ends a stage still running when the request completes (its client gone) with the request', () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    const slice = tracing.begin(arriving(), '/v1/pets');
    slice.spans!.startAuthenticate();
    slice.spans!.keyCacheAnswered('miss');
    tracing.end(slice, { ...OK, statusCode: 499, route: undefined, operationId: undefined, keyId: undefined });
    slice.spans!.endLookup();
    slice.spans!.endAuthenticate('ok');
    const spans = byName(readableSpans(completed[0]!, resource, scope));
    expect(Object.keys(spans)).toEqual(['redis key_lookup', 'authenticate', 'GET']);
    expect(spans['redis key_lookup']!.endTime).toEqual(spans.GET!.endTime);
    expect(spans.authenticate!.endTime).toEqual(spans.GET!.endTime);
    expect(spans.authenticate!.attributes).toEqual({ 'gateway.auth.key_cache': 'miss' });
  });

  it('adds nothing to a request once it has completed', () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    const slice = tracing.begin(arriving(), '/v1/pets');
    slice.spans!.startAuthenticate();
    tracing.end(slice, OK);
    const facts = () =>
      readableSpans(completed[0]!, resource, scope).map((span) => ({
        name: span.name,
        context: span.spanContext(),
        parent: span.parentSpanContext,
        times: [span.startTime, span.endTime],
        attributes: span.attributes,
        status: span.status,
      }));
    const before = facts();
    slice.spans!.keyCacheAnswered('miss');
    slice.spans!.endAuthenticate('ok');
    slice.spans!.startRateLimit(true);
    slice.spans!.endRateLimit('limited');
    tracing.startExchange(slice, 'GET', 'http://backend.test/v1/pets').end({ status: 500 });
    tracing.end(slice, { ...OK, statusCode: 500 });
    expect(completed).toHaveLength(1);
    expect(facts()).toEqual(before);
  });

  it("names a request of no operation by its method, and one of a method semantic conventions don't know HTTP (_OTHER)", () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    for (const method of ['GET', 'BREW']) {
      const slice = tracing.begin({ ...arriving(), method } as IncomingMessage, '/nowhere');
      tracing.end(slice, { statusCode: 404, route: undefined, operationId: undefined, keyId: undefined, errorCode: 'not_found' });
    }
    const [get, brew] = completed.map((request) => readableSpans(request, resource, scope)[0]!);
    expect([get!.name, get!.attributes['http.request.method']]).toEqual(['GET', 'GET']);
    expect([brew!.name, brew!.attributes['http.request.method']]).toEqual(['HTTP', '_OTHER']);
  });

  const authenticated = (result: string) => (spans: RequestSpans) => {
    spans.startAuthenticate();
    spans.endAuthenticate(result);
  };
  const limited = (outcome: RateLimitOutcome, onStoreError?: 'allow' | 'deny') => (spans: RequestSpans) => {
    spans.startRateLimit(false);
    spans.endRateLimit(outcome, onStoreError === undefined ? undefined : { name: 'RateLimitStoreUnavailableError', onStoreError });
  };
  const STAGE_STATUSES: [string, (spans: RequestSpans) => void, string, unknown][] = [
    [
      'a key store that cannot answer',
      authenticated('store_unavailable'),
      'authenticate',
      { code: SpanStatusCode.ERROR, message: 'API keys cannot be checked' },
    ],
    ['a refused key', authenticated('revoked'), 'authenticate', { code: SpanStatusCode.UNSET }],
    [
      'a rate-limit store that cannot count',
      limited('store_unavailable', 'deny'),
      'rate_limit',
      { code: SpanStatusCode.ERROR, message: 'the rate-limit store cannot count' },
    ],
    ['a limiter that failed otherwise', limited('failed'), 'rate_limit', { code: SpanStatusCode.ERROR }],
    ['a limited request', limited('limited'), 'rate_limit', { code: SpanStatusCode.UNSET }],
  ];
  for (const [what, stage, name, status] of STAGE_STATUSES)
    it(`gives ${what} the ${name} span's status ${JSON.stringify(status)}`, () => {
      const { tracing, completed } = tracingWith(new AlwaysOnSampler());
      const slice = tracing.begin(arriving(), '/v1/pets');
      stage(slice.spans!);
      tracing.end(slice, { ...OK, statusCode: 503 });
      expect(byName(readableSpans(completed[0]!, resource, scope))[name]!.status).toEqual(status);
    });

  it('marks the CLIENT span an error with its failure, and the SERVER span with its Error code for a 5xx', () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    const slice = tracing.begin(arriving(), '/v1/pets');
    tracing.startExchange(slice, 'GET', 'http://backend.test/v1/pets').end({ failure: 'upstream_timeout' });
    tracing.end(slice, { ...OK, statusCode: 504, errorCode: 'upstream_timeout' });
    const spans = byName(readableSpans(completed[0]!, resource, scope));
    expect(spans.GET!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'upstream_timeout' });
    expect(spans.GET!.attributes['error.type']).toBe('upstream_timeout');
    expect(spans['GET /v1/pets']!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'upstream_timeout' });
    expect(spans['GET /v1/pets']!.attributes).toMatchObject({
      'error.type': '504',
      'gateway.error_code': 'upstream_timeout',
      'http.response.status_code': 504,
    });
  });
});

const SAMPLERS = [
  { OTEL_TRACES_SAMPLER: 'always_on' },
  { OTEL_TRACES_SAMPLER: 'always_off' },
  { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' },
  { OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
  { OTEL_TRACES_SAMPLER: 'parentbased_always_off' },
  { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' },
];

const traceId = fc.stringMatching(/^[0-9a-f]{32}$/).filter((id) => !/^0+$/.test(id));

describe("the children of the gateway's SERVER span", () => {
  for (const env of SAMPLERS)
    it(`are sampled as it is, with no attributes or trace state of the sampler's, under ${env.OTEL_TRACES_SAMPLER}`, () => {
      const { sampler } = samplerFrom(env);
      let sampledServers = 0;
      fc.assert(
        fc.property(traceId, fc.boolean(), (id, remoteParentSampled) => {
          // The SERVER span: a root, or the child of a remote parent.
          const remote = trace.setSpanContext(ROOT_CONTEXT, {
            traceId: id,
            spanId: 'b7ad6b7169203331',
            traceFlags: remoteParentSampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
            isRemote: true,
          });
          for (const parentOfServer of [ROOT_CONTEXT, remote]) {
            const server = sampler.shouldSample(parentOfServer, id, 'GET', SpanKind.SERVER, {}, []);
            // Nothing of the sampler's own on the SERVER span either: it is given none.
            expect(server).toEqual({ decision: server.decision });
            const sampled = server.decision === SamplingDecision.RECORD_AND_SAMPLED;
            if (sampled) sampledServers++;
            const local = trace.setSpanContext(ROOT_CONTEXT, {
              traceId: id,
              spanId: '00f067aa0ba902b7',
              traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
            });
            const child = sampler.shouldSample(local, id, 'rate_limit', SpanKind.INTERNAL, {}, []);
            if (sampled) expect(child).toEqual({ decision: SamplingDecision.RECORD_AND_SAMPLED });
            else expect(child.decision).not.toBe(SamplingDecision.RECORD_AND_SAMPLED);
          }
        }),
        { numRuns: 200 },
      );
      // always_off samples no SERVER span, so it makes no child to take the shortcut for; every other has some.
      expect(sampledServers > 0).toBe(env.OTEL_TRACES_SAMPLER !== 'always_off');
    });
});
