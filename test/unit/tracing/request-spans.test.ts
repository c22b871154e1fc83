// A request's spans as the gateway builds them from its record: which requests have them, how the stages'
// spans and the CLIENT span join the SERVER span, and the samplers OTEL_TRACES_SAMPLER names against the shortcut the
// stages take (their spans recorded and sampled as the SERVER span, with nothing of their own from the sampler).
import type { IncomingMessage } from 'node:http';
import { ROOT_CONTEXT, SamplingDecision, SpanKind, SpanStatusCode, TraceFlags, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, type ReadableSpan, type Sampler } from '@opentelemetry/sdk-trace';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatTraceParent } from '../../../src/http/trace-context.ts';
import { createRecord, type RequestRecord } from '../../../src/pipeline/request-record.ts';
import type { RateLimitOutcome } from '../../../src/limits/rate-limit.ts';
import { samplerFrom } from '../../../src/tracing/from-environment.ts';
import { readableSpans } from '../../../src/tracing/readable-spans.ts';
import type { RequestSpans } from '../../../src/tracing/request-spans.ts';
import { recordingTracing, type Tracing } from '../../../src/tracing/tracer.ts';

const resource = resourceFromAttributes({ 'service.name': 'petstore-gateway' });
const scope = { name: 'petstore-gateway', version: '1.0.0' };

function tracingWith(sampler: Sampler): { tracing: Tracing; completed: RequestSpans[] } {
  const completed: RequestSpans[] = [];
  const tracing = recordingTracing(sampler, { onEnd: (spans) => completed.push(spans) }, { shutdown: () => Promise.resolve(), droppedSpans: () => 0 });
  return { tracing, completed };
}

/** A request's record as the gateway makes one on arrival (its trace begun by `tracing`): its method, headers and socket. */
function arriving(tracing: Tracing, headers: Record<string, string> = {}, method = 'GET', url = '/v1/pets'): RequestRecord {
  const req = { method, url, headers: { host: 'gateway.test:8080', ...headers }, socket: {} } as unknown as IncomingMessage;
  return createRecord(req, tracing.begin);
}

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const OK = { statusCode: 200, route: '/v1/pets', operationId: 'listPets', keyId: 'key_0123456789ab', errorCode: undefined };
const BACKEND = { hostname: 'backend.test', port: 4010, origin: 'http://backend.test:4010' };

/** The upstream exchange's facts as it writes them (begun now), and its slice when it settled. */
function exchanged(record: RequestRecord, slice?: RequestRecord['upstream']): void {
  record.exchangeStartMs = performance.now();
  record.exchangeMethod = 'GET';
  record.exchangeOrigin = BACKEND;
  record.exchangePath = '/v1/pets?limit=5';
  if (slice === undefined) return;
  record.exchangeEndMs = performance.now();
  record.upstream = slice;
}

/** The stages of a request that passed, as they write their facts; the `traceparent` the upstream was sent. */
function passThrough(tracing: Tracing, record: RequestRecord): string {
  record.authStartMs = performance.now();
  record.keyCache = 'miss';
  record.lookupStartMs = performance.now();
  record.lookupEndMs = performance.now();
  record.authResult = 'ok';
  record.authEndMs = performance.now();
  record.rateLimitStartMs = performance.now();
  record.rateLimitWaitedForRedis = true;
  record.rateLimitOutcome = 'allowed';
  record.rateLimitEndMs = performance.now();
  exchanged(record, { status: 200, ms: 1 });
  tracing.end(record, OK);
  const { traceId, upstreamParentId, sampled } = record.trace;
  return formatTraceParent(traceId, upstreamParentId, sampled);
}

function byName(spans: readonly ReadableSpan[]): Record<string, ReadableSpan> {
  return Object.fromEntries(
    spans.map((span) => [span.kind === SpanKind.CLIENT && span.name === 'redis' ? `redis ${span.attributes['gateway.redis.command']}` : span.name, span]),
  );
}

describe('recorded spans', () => {
  it("hands a sampled request's spans on when it completes, its SERVER span the access log's", () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    const record = arriving(tracing);
    expect(record.trace.sampled).toBe(true);
    tracing.end(record, OK);
    expect(completed).toHaveLength(1);
    expect(readableSpans(completed[0]!, resource, scope).map((span) => span.spanContext().spanId)).toEqual([record.trace.spanId]);
  });

  it("continues the client's trace: the SERVER span its child, the stages' and the CLIENT span the SERVER span's", () => {
    const { tracing, completed } = tracingWith(new ParentBasedSampler({ root: new AlwaysOnSampler() }));
    const record = arriving(tracing, { traceparent: TRACEPARENT, tracestate: 'rojo=00f067aa0ba902b7' });
    const traceparent = passThrough(tracing, record);
    const spans = byName(readableSpans(completed[0]!, resource, scope));
    expect(Object.keys(spans)).toEqual(['redis key_lookup', 'authenticate', 'redis rate_limit_increment', 'rate_limit', 'GET', 'GET /v1/pets']);
    const server = spans['GET /v1/pets']!;
    expect(server.spanContext()).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: record.trace.spanId, traceFlags: TraceFlags.SAMPLED });
    expect(server.spanContext().traceState?.serialize()).toBe('rojo=00f067aa0ba902b7');
    expect(server.parentSpanContext).toMatchObject({ spanId: 'b7ad6b7169203331', isRemote: true });
    for (const name of ['authenticate', 'rate_limit', 'GET']) expect(spans[name]!.parentSpanContext).toMatchObject({ spanId: record.trace.spanId });
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

  it('records nothing of a trace its client did not sample, and tells the upstream so, with a span id of its own', () => {
    const { tracing, completed } = tracingWith(new ParentBasedSampler({ root: new AlwaysOnSampler() }));
    const record = arriving(tracing, { traceparent: TRACEPARENT.replace(/01$/, '00') });
    const slice = record.trace;
    expect(slice).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', sampled: false, spans: undefined });
    expect(formatTraceParent(slice.traceId, slice.upstreamParentId, slice.sampled)).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-00$/);
    expect([slice.spanId, 'b7ad6b7169203331']).not.toContain(slice.upstreamParentId);
    tracing.end(record, OK);
    expect(completed).toEqual([]);
  });

  it('records nothing under always_off', () => {
    const { tracing, completed } = tracingWith(new AlwaysOffSampler());
    const record = arriving(tracing);
    expect(record.trace.spans).toBeUndefined();
    tracing.end(record, OK);
    expect(completed).toEqual([]);
  });

  it('ends a stage still running when the request completes (its client gone) with the request', () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    const record = arriving(tracing);
    record.authStartMs = performance.now();
    record.keyCache = 'miss';
    record.lookupStartMs = performance.now();
    tracing.end(record, { ...OK, statusCode: 499, route: undefined, operationId: undefined, keyId: undefined });
    const spans = byName(readableSpans(completed[0]!, resource, scope));
    expect(Object.keys(spans)).toEqual(['redis key_lookup', 'authenticate', 'GET']);
    expect(spans['redis key_lookup']!.endTime).toEqual(spans.GET!.endTime);
    expect(spans.authenticate!.endTime).toEqual(spans.GET!.endTime);
    expect(spans.authenticate!.attributes).toEqual({ 'gateway.auth.key_cache': 'miss' });
  });

  it('reads nothing the record is given once the request has completed', () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    const record = arriving(tracing);
    record.authStartMs = performance.now();
    tracing.end(record, OK);
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
    record.keyCache = 'miss';
    record.authResult = 'ok';
    record.authEndMs = performance.now();
    record.rateLimitStartMs = performance.now();
    record.rateLimitOutcome = 'limited';
    exchanged(record, { status: 500 });
    expect(completed).toHaveLength(1);
    expect(facts()).toEqual(before);
  });

  it('converts the monotonic times to the wall clock, in their order', () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    const before = Date.now();
    passThrough(tracing, arriving(tracing));
    const spans = readableSpans(completed[0]!, resource, scope);
    const ms = ([seconds, nanos]: readonly [number, number]) => seconds * 1000 + nanos / 1e6;
    const server = spans.at(-1)!;
    expect(ms(server.startTime)).toBeGreaterThanOrEqual(before - 1);
    expect(ms(server.endTime)).toBeLessThanOrEqual(Date.now() + 1);
    for (const span of spans) {
      expect(ms(span.startTime)).toBeGreaterThanOrEqual(ms(server.startTime));
      expect(ms(span.endTime)).toBeGreaterThanOrEqual(ms(span.startTime));
      expect(ms(span.endTime)).toBeLessThanOrEqual(ms(server.endTime));
    }
  });

  it("names a request of no operation by its method, and one of a method semantic conventions don't know HTTP (_OTHER)", () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    for (const method of ['GET', 'BREW'])
      tracing.end(arriving(tracing, {}, method, '/nowhere'), {
        statusCode: 404,
        route: undefined,
        operationId: undefined,
        keyId: undefined,
        errorCode: 'not_found',
      });
    const [get, brew] = completed.map((request) => readableSpans(request, resource, scope)[0]!);
    expect([get!.name, get!.attributes['http.request.method']]).toEqual(['GET', 'GET']);
    expect([brew!.name, brew!.attributes['http.request.method']]).toEqual(['HTTP', '_OTHER']);
  });

  const authenticated = (result: string) => (record: RequestRecord) => {
    record.authStartMs = performance.now();
    record.authResult = result;
    record.authEndMs = performance.now();
  };
  const limited = (outcome: RateLimitOutcome, onStoreError?: 'allow' | 'deny') => (record: RequestRecord) => {
    record.rateLimitStartMs = performance.now();
    record.rateLimitOutcome = outcome;
    if (onStoreError !== undefined) {
      record.rateLimitStoreError = 'RateLimitStoreUnavailableError';
      record.onStoreError = onStoreError;
    }
    record.rateLimitEndMs = performance.now();
  };
  const STAGE_STATUSES: [string, (record: RequestRecord) => void, string, unknown][] = [
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
      const record = arriving(tracing);
      stage(record);
      tracing.end(record, { ...OK, statusCode: 503 });
      expect(byName(readableSpans(completed[0]!, resource, scope))[name]!.status).toEqual(status);
    });

  it('marks the CLIENT span an error with its failure, and the SERVER span with its Error code for a 5xx', () => {
    const { tracing, completed } = tracingWith(new AlwaysOnSampler());
    const record = arriving(tracing);
    exchanged(record, { failure: 'headers_timeout' });
    tracing.end(record, { ...OK, statusCode: 504, errorCode: 'upstream_timeout' });
    const spans = byName(readableSpans(completed[0]!, resource, scope));
    expect(spans.GET!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'headers_timeout' });
    expect(spans.GET!.attributes['error.type']).toBe('headers_timeout');
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
