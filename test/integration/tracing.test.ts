// The gateway in a trace: W3C trace context continued to a real upstream, the access log's ids, and the
// spans the OpenTelemetry SDK exports to a real OTLP/HTTP receiver (JSON and protobuf).
import type { IncomingHttpHeaders } from 'node:http';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminApp } from '../../src/admin/admin-app.ts';
import { CachedKeyStore } from '../../src/auth/cached-key-store.ts';
import { KeyStoreUnavailableError } from '../../src/auth/key-store.ts';
import { RedisRateLimitStore } from '../../src/limits/redis-rate-limit-store.ts';
import { RateLimitStoreUnavailableError } from '../../src/limits/rate-limit-store-failure.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { tracingFromEnvironment } from '../../src/tracing/from-environment.ts';
import { buildTestGateway, TEST_NOW, type TestGateway, type TestGatewayOptions } from '../helpers/build-test-app.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { startRawUpstream } from '../helpers/raw-socket.ts';
import { requestPathClient, startRedis } from '../../support/start-redis.ts';
import { type ScriptedUpstream, startScriptedUpstream, refusedPort } from '../../support/start-upstream.ts';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;
const INTERNAL = 1;
const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

let gateway: TestGateway | undefined;
let upstream: ScriptedUpstream | undefined;
let receiver: OtlpReceiver | undefined;
/** The headers of every request the upstream received. */
let received: IncomingHttpHeaders[] = [];
afterEach(async () => {
  await gateway?.close();
  await upstream?.close();
  await receiver?.close();
  gateway = upstream = receiver = undefined;
  received = [];
});

async function start(env?: Record<string, string>, options: Partial<TestGatewayOptions> = {}): Promise<TestGateway> {
  upstream = await startScriptedUpstream((req, res) => {
    received.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
  });
  const tracing = env && tracingFromEnvironment(env, { name: 'petstore-gateway', version: '1.0.0' }).tracing;
  gateway = buildTestGateway({ ...options, upstreamUrl: upstream.baseUrl, ...(tracing ? { tracing } : {}) });
  return gateway;
}

function accessLine(requestId: string): Record<string, unknown> {
  const lines = gateway!.logs.filter((entry) => entry.reqId === requestId && entry.res !== undefined);
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

function upstreamParent(): { traceId: string; spanId: string; flags: string } {
  expect(received).toHaveLength(1);
  const [, traceId, spanId, flags] = TRACEPARENT.exec(String(received[0]!.traceparent))!;
  return { traceId: traceId!, spanId: spanId!, flags: flags! };
}

const listPets = (headers: Record<string, string>) => {
  let call = request(gateway!.app).get('/v1/pets').set('Authorization', `Bearer ${gateway!.apiKey}`);
  for (const [name, value] of Object.entries(headers)) call = call.set(name, value);
  return call;
};

describe('trace context without an exporter', () => {
  it("continues a valid traceparent: same trace, the gateway's span as parent, sampled flag kept", async () => {
    await start();
    const res = await listPets({ traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`, 'X-Request-Id': 'trace-continue-1' });
    expect(res.status).toBe(200);
    const parent = upstreamParent();
    expect(parent.traceId).toBe(TRACE_ID);
    expect(parent.spanId).not.toBe(CLIENT_SPAN);
    expect(parent.flags).toBe('01');
    // Without spans, the access log's span is the one the upstream names: a backend's log line joins the gateway's.
    expect(accessLine('trace-continue-1')).toMatchObject({ trace_id: TRACE_ID, span_id: parent.spanId });
  });

  it('keeps an unsampled flag unsampled', async () => {
    await start();
    await listPets({ traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-00` });
    expect(upstreamParent()).toMatchObject({ traceId: TRACE_ID, flags: '00' });
  });

  it('passes tracestate on with a valid traceparent, its malformed members dropped', async () => {
    await start();
    await listPets({ traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`, tracestate: 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7,Bad Key=1' });
    expect(received[0]!.tracestate).toBe('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
  });

  it.each([
    ['upper-case hex', `00-${TRACE_ID.toUpperCase()}-${CLIENT_SPAN}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01`],
    ['an all-zero span id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE_ID}-${CLIENT_SPAN}-01`],
    ['trailing data on version 00', `00-${TRACE_ID}-${CLIENT_SPAN}-01-extra`],
    ['garbage', 'not a traceparent'],
  ])('starts a new trace for a traceparent with %s, and drops its tracestate', async (_case, traceparent) => {
    await start();
    await listPets({ traceparent, tracestate: 'congo=t61rcWkgMzE', 'X-Request-Id': 'trace-invalid-1' });
    const parent = upstreamParent();
    expect(parent.traceId).not.toBe(TRACE_ID);
    expect(parent.traceId).not.toBe('0'.repeat(32));
    expect(parent.flags).toBe('00');
    expect(received[0]!.tracestate).toBeUndefined();
    expect(accessLine('trace-invalid-1')).toMatchObject({ trace_id: parent.traceId, span_id: parent.spanId });
  });

  it('starts a new trace when there is no traceparent, and logs its ids on a refusal too', async () => {
    await start();
    const res = await request(gateway!.app).get('/v1/pets').set('X-Request-Id', 'trace-refused-1');
    expect(res.status).toBe(401);
    const line = accessLine('trace-refused-1');
    expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(line.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(received).toHaveLength(0);
  });

  it('passes baggage on, bounded to 64 whole members', async () => {
    await start();
    const members = Array.from({ length: 80 }, (_, index) => `k${index}=v${index}`);
    await listPets({ baggage: members.join(',') });
    expect(received[0]!.baggage).toBe(members.slice(0, 64).join(','));
  });

  it('passes baggage on, bounded to 8192 bytes of whole members', async () => {
    await start();
    const members = Array.from({ length: 5 }, (_, index) => `k${index}=${'x'.repeat(2000)}`);
    await listPets({ baggage: members.join(',') });
    expect(received[0]!.baggage).toBe(members.slice(0, 4).join(','));
  });
});

describe('spans exported over OTLP/HTTP', () => {
  /** OTEL_* for a receiver: batches sent at once, so a test waits for an event, not a timer. */
  const exporting = (protocol: string, extra: Record<string, string> = {}) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver!.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_SERVICE_NAME: 'gateway-under-test',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    OTEL_BSP_SCHEDULE_DELAY: '10',
    ...extra,
  });

  it.each([
    ['http/json', 'application/json'],
    ['http/protobuf', 'application/x-protobuf'],
  ])('%s: a SERVER span continuing the client and a CLIENT span the upstream names as its parent', async (protocol, contentType) => {
    receiver = await startOtlpReceiver();
    await start(exporting(protocol));
    const res = await listPets({ traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`, tracestate: 'congo=t61rcWkgMzE', 'X-Request-Id': 'trace-export-1' });
    expect(res.status).toBe(200);
    // SERVER, CLIENT, and the stages' children (authenticate, rate_limit).
    const spans = await receiver.waitForSpans(4);
    expect(receiver.contentTypes[0]).toBe(contentType);
    const server = spans.find((span) => span.kind === SERVER)!;
    const client = spans.find((span) => span.kind === CLIENT)!;
    expect(server).toMatchObject({ traceId: TRACE_ID, parentSpanId: CLIENT_SPAN, name: 'GET /v1/pets', traceState: 'congo=t61rcWkgMzE' });
    expect(server.attributes).toEqual({
      'http.request.method': 'GET',
      'url.scheme': 'http',
      'url.path': '/v1/pets',
      'server.address': '127.0.0.1',
      'server.port': expect.any(Number),
      'http.route': '/v1/pets',
      'http.response.status_code': 200,
      'gateway.operation': 'listPets',
      'gateway.key_id': 'key_primary',
    });
    expect(server.resource).toMatchObject({ 'service.name': 'gateway-under-test', 'deployment.environment.name': 'test' });
    expect(client).toMatchObject({ traceId: TRACE_ID, parentSpanId: server.spanId, name: 'GET' });
    expect(client.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.response.status_code': 200, 'server.address': '127.0.0.1' });
    expect(upstreamParent()).toEqual({ traceId: TRACE_ID, spanId: client.spanId, flags: '01' });
    expect(accessLine('trace-export-1')).toMatchObject({ trace_id: TRACE_ID, span_id: server.spanId });
  });

  it('exports a refusal as a SERVER span with its Error code, and no CLIENT span', async () => {
    receiver = await startOtlpReceiver();
    await start(exporting('http/json'));
    const res = await request(gateway!.app).get('/v1/pets').set('Authorization', 'Bearer nope').set('traceparent', `00-${TRACE_ID}-${CLIENT_SPAN}-01`);
    expect(res.status).toBe(401);
    await gateway!.close();
    // The SERVER span and its authenticate child (see "child spans of the stages").
    expect(receiver.spans.map((span) => span.name)).toEqual(['authenticate', 'GET /v1/pets']);
    const server = receiver.spans[1]!;
    expect(server).toMatchObject({ kind: SERVER, status: { code: 0 } });
    expect(server.attributes).toMatchObject({ 'http.response.status_code': 401, 'gateway.error_code': 'unauthorized' });
    expect(server.attributes).not.toHaveProperty('gateway.key_id');
  });

  it("names the upstream in the CLIENT span's url.full without the user and password of its configured URL, or the query", async () => {
    receiver = await startOtlpReceiver();
    const tracing = tracingFromEnvironment(exporting('http/json'), { name: 'petstore-gateway', version: '1.0.0' }).tracing;
    const port = await refusedPort();
    gateway = buildTestGateway({ upstreamUrl: `http://gateway:s3cret@127.0.0.1:${port}/v1`, tracing });
    await request(gateway.app).get('/v1/pets?limit=5').set('Authorization', `Bearer ${gateway.apiKey}`);
    const spans = await receiver.waitForSpans(4);
    expect(spans.find((span) => span.kind === CLIENT)!.attributes['url.full']).toBe(`http://127.0.0.1:${port}/v1/pets`);
  });

  it('marks the CLIENT and SERVER spans as errors when the upstream cannot be reached', async () => {
    receiver = await startOtlpReceiver();
    const tracing = tracingFromEnvironment(exporting('http/json'), { name: 'petstore-gateway', version: '1.0.0' }).tracing;
    gateway = buildTestGateway({ upstreamUrl: `http://127.0.0.1:${await refusedPort()}/v1`, tracing });
    const res = await listPets({});
    expect(res.status).toBe(502);
    const spans = await receiver.waitForSpans(4);
    const client = spans.find((span) => span.kind === CLIENT)!;
    expect(client.status.code).toBe(ERROR);
    expect(client.attributes['error.type']).toBe('refused');
    const server = spans.find((span) => span.kind === SERVER)!;
    expect(server).toMatchObject({ status: { code: ERROR } });
    expect(server.attributes).toMatchObject({ 'http.response.status_code': 502, 'error.type': '502', 'gateway.error_code': 'bad_gateway' });
  });

  it('honours an unsampled parent: nothing exported, the upstream told 00', async () => {
    receiver = await startOtlpReceiver();
    await start(exporting('http/json'));
    await listPets({ traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-00` });
    await gateway!.close();
    expect(receiver.spans).toEqual([]);
    expect(upstreamParent()).toMatchObject({ traceId: TRACE_ID, flags: '00' });
  });

  it('with the collector down, answers, shuts down, and counts the dropped spans', async () => {
    const port = await refusedPort();
    await start({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TIMEOUT: '300',
      OTEL_BSP_SCHEDULE_DELAY: '10',
    });
    for (let index = 0; index < 3; index++) expect((await listPets({})).status).toBe(200);
    await gateway!.close();
    // SERVER, CLIENT, authenticate and rate_limit for each.
    expect(await gateway!.scrape()).toMatch(/^petstore_gateway_trace_spans_dropped_total\{environment="production"\} 12$/m);
  });

  it('with a collector that never answers, answers without waiting for it', async () => {
    // A request that waited on the export would take the exporter's timeout, more than twice the bound
    // below for the three; the bound itself is loose enough for a slow machine.
    const silent = await startRawUpstream(() => undefined);
    try {
      await start({
        OTEL_EXPORTER_OTLP_ENDPOINT: silent.baseUrl,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TIMEOUT: '3000',
        OTEL_BSP_SCHEDULE_DELAY: '10',
      });
      const started = performance.now();
      for (let index = 0; index < 3; index++) expect((await listPets({})).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(1500);
    } finally {
      await silent.close();
    }
  });
});

describe('child spans of the stages', () => {
  const exporting = () => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver!.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '10',
  });
  /** The production arrangement: the key cache in front of the store (here the test gateway's memory store). */
  const cachedKeys = () =>
    new CachedKeyStore(
      { findByHash: (hash) => gateway!.keyStore.findByHash(hash) },
      { maxEntries: 10, ttlMs: 60_000, negativeTtlMs: 60_000, clock: fixedClock(TEST_NOW) },
    );
  const named = (name: string) => receiver!.spans.filter((span) => span.name === name);
  const serverSpans = () => receiver!.spans.filter((span) => span.kind === SERVER);

  it('authenticate (a cache miss with its redis lookup, then a hit) and rate_limit, children of the SERVER span', async () => {
    receiver = await startOtlpReceiver();
    await start(exporting(), { keyStore: cachedKeys() });
    expect((await listPets({})).status).toBe(200);
    expect((await listPets({})).status).toBe(200);
    await gateway!.close();
    const [first, second] = serverSpans();
    const [miss, hit] = named('authenticate');
    expect(miss).toMatchObject({ kind: INTERNAL, traceId: first!.traceId, parentSpanId: first!.spanId, status: { code: 0 } });
    expect(miss!.attributes).toEqual({ 'gateway.auth.key_cache': 'miss', 'gateway.auth.result': 'ok' });
    expect(hit).toMatchObject({ kind: INTERNAL, traceId: second!.traceId, parentSpanId: second!.spanId });
    expect(hit!.attributes).toEqual({ 'gateway.auth.key_cache': 'hit', 'gateway.auth.result': 'ok' });
    // Only the miss asked the store.
    const lookups = named('redis');
    expect(lookups).toHaveLength(1);
    expect(lookups[0]).toMatchObject({ kind: CLIENT, traceId: first!.traceId, parentSpanId: miss!.spanId });
    expect(lookups[0]!.attributes).toEqual({ 'db.system.name': 'redis', 'gateway.redis.command': 'key_lookup' });
    const limits = named('rate_limit');
    expect(limits.map((span) => [span.kind, span.parentSpanId, span.attributes])).toEqual([
      [INTERNAL, first!.spanId, { 'gateway.rate_limit.decision': 'allowed' }],
      [INTERNAL, second!.spanId, { 'gateway.rate_limit.decision': 'allowed' }],
    ]);
  });

  it('a 401: the authenticate span says why, and no rate_limit span', async () => {
    receiver = await startOtlpReceiver();
    await start(exporting());
    expect((await request(gateway!.app).get('/v1/pets')).status).toBe(401);
    expect((await request(gateway!.app).get('/v1/pets').set('Authorization', 'Bearer nope')).status).toBe(401);
    await gateway!.close();
    const [missing, unknown] = serverSpans();
    expect(named('authenticate').map((span) => [span.parentSpanId, span.attributes])).toEqual([
      [missing!.spanId, { 'gateway.auth.result': 'missing' }],
      [unknown!.spanId, { 'gateway.auth.result': 'unknown' }],
    ]);
    expect(named('rate_limit')).toEqual([]);
  });

  it('a 429: the rate_limit span is marked limited', async () => {
    receiver = await startOtlpReceiver();
    await start(exporting(), { overrides: { rateLimit: { windowMs: 60_000, limits: { production: { default: 1 }, staging: { default: 1 } } } } });
    expect((await listPets({})).status).toBe(200);
    expect((await listPets({})).status).toBe(429);
    await gateway!.close();
    const limited = serverSpans().find((span) => span.attributes['http.response.status_code'] === 429)!;
    const decisions = named('rate_limit').map((span) => [span.parentSpanId === limited.spanId, span.attributes['gateway.rate_limit.decision']]);
    expect(decisions).toEqual([
      [false, 'allowed'],
      [true, 'limited'],
    ]);
  });

  it('a store that cannot answer: the authenticate span and its redis lookup are errors', async () => {
    receiver = await startOtlpReceiver();
    const down = { findByHash: () => Promise.reject(new KeyStoreUnavailableError('connect ECONNREFUSED')) };
    const keyStore = new CachedKeyStore(down, { maxEntries: 10, ttlMs: 60_000, negativeTtlMs: 60_000, clock: fixedClock(TEST_NOW) });
    await start(exporting(), { keyStore });
    expect((await listPets({})).status).toBe(503);
    await gateway!.close();
    const [authenticate] = named('authenticate');
    expect(authenticate).toMatchObject({ status: { code: ERROR } });
    expect(authenticate!.attributes).toEqual({ 'gateway.auth.key_cache': 'miss', 'gateway.auth.result': 'store_unavailable' });
    expect(named('redis')[0]).toMatchObject({ kind: CLIENT, parentSpanId: authenticate!.spanId, status: { code: ERROR } });
    expect(named('redis')[0]!.attributes).toMatchObject({ 'error.type': 'KeyStoreUnavailableError' });
  });

  it("the exact store: each request's wait for its count is a redis span under its rate_limit span", async () => {
    receiver = await startOtlpReceiver();
    const redis = await startRedis();
    const client = await requestPathClient(redis.url, 'tracing-test');
    try {
      const rateLimitStore = new RedisRateLimitStore(client, { prefix: 'test:rate:', clock: fixedClock(TEST_NOW) });
      await start(exporting(), { rateLimitStore });
      const answers = await Promise.all([listPets({}), listPets({})]);
      expect(answers.map((res) => res.status)).toEqual([200, 200]);
      await gateway!.close();
    } finally {
      client.disconnect();
      await redis.stop();
    }
    const limits = named('rate_limit');
    expect(limits).toHaveLength(2);
    // The two requests share one command (one key, one event-loop turn); each has its own span of the wait.
    const waits = named('redis').filter((span) => span.attributes['gateway.redis.command'] === 'rate_limit_increment');
    expect(waits.map((span) => [span.kind, span.traceId, span.parentSpanId]).sort()).toEqual(limits.map((span) => [CLIENT, span.traceId, span.spanId]).sort());
    expect(waits[0]!.attributes).toEqual({ 'db.system.name': 'redis', 'gateway.redis.command': 'rate_limit_increment' });
  });

  it('the exact store unable to count: its redis span is an error', async () => {
    receiver = await startOtlpReceiver();
    const redis = await startRedis();
    const client = await requestPathClient(redis.url, 'tracing-test');
    await redis.kill();
    try {
      const rateLimitStore = new RedisRateLimitStore(client, { prefix: 'test:rate:', clock: fixedClock(TEST_NOW) });
      await start(exporting(), { rateLimitStore, overrides: { rateLimit: { onStoreError: 'deny' } } });
      expect((await listPets({})).status).toBe(503);
      await gateway!.close();
    } finally {
      client.disconnect();
      await redis.stop();
    }
    const [limit] = named('rate_limit');
    const [wait] = named('redis');
    expect(wait).toMatchObject({ kind: CLIENT, parentSpanId: limit!.spanId, status: { code: ERROR } });
    expect(wait!.attributes).toEqual({
      'db.system.name': 'redis',
      'gateway.redis.command': 'rate_limit_increment',
      'error.type': 'RateLimitStoreUnavailableError',
    });
  });

  it.each(['allow', 'deny'] as const)('a rate-limit store that cannot count (onStoreError %s): the span says store_unavailable', async (onStoreError) => {
    receiver = await startOtlpReceiver();
    const rateLimitStore = {
      countsInRedis: false,
      count: () => Promise.reject(new RateLimitStoreUnavailableError('Redis could not count the rate-limit hits')),
    };
    await start(exporting(), { rateLimitStore, overrides: { rateLimit: { onStoreError } } });
    expect((await listPets({})).status).toBe(onStoreError === 'allow' ? 200 : 503);
    await gateway!.close();
    const [limit] = named('rate_limit');
    expect(limit).toMatchObject({ kind: INTERNAL, status: { code: ERROR } });
    expect(limit!.attributes).toEqual({ 'gateway.rate_limit.decision': 'store_unavailable', 'gateway.rate_limit.on_store_error': onStoreError });
  });
});

describe('exemplars on the latency histograms', () => {
  const OPENMETRICS = 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2';
  const scrape = (accept?: string) => {
    const call = request(createAdminApp({ ...gateway!.admin, isAcceptingTraffic: () => true })).get('/metrics');
    return accept === undefined ? call : call.set('Accept', accept);
  };
  const exemplars = (text: string) =>
    [...text.matchAll(/^(petstore_gateway_\w+)_bucket\{[^}]*\} \d+ # \{trace_id="([0-9a-f]{32})"\} /gm)].map((match) => [match[1], match[2]]);

  it("an OpenMetrics scrape shows a sampled request's trace id on its latency buckets; a plain scrape is unchanged", async () => {
    receiver = await startOtlpReceiver();
    await start({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '10' });
    expect((await listPets({ traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` })).status).toBe(200);
    // Not sampled: counted, with no exemplar.
    expect((await listPets({ traceparent: `00-${'1'.repeat(32)}-${CLIENT_SPAN}-00` })).status).toBe(200);
    const open = await scrape(OPENMETRICS);
    expect(open.status).toBe(200);
    expect(open.headers['content-type']).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
    expect(open.headers.vary).toBe('Accept');
    expect(open.text.endsWith('# EOF\n')).toBe(true);
    expect(exemplars(open.text)).toEqual([
      ['petstore_gateway_request_duration_seconds', TRACE_ID],
      ['petstore_gateway_upstream_duration_seconds', TRACE_ID],
      ['petstore_gateway_overhead_seconds', TRACE_ID],
    ]);
    for (const accept of [undefined, '*/*', 'text/plain']) {
      const plain = await scrape(accept);
      expect(plain.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(plain.text).not.toContain('# {');
      expect(plain.text).toMatch(/^petstore_gateway_requests_total\{operation="listPets",method="GET",status_code="200",environment="production"\} 2$/m);
    }
  });

  it('no exemplar without an exporter, even for a sampled client', async () => {
    await start();
    expect((await listPets({ traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` })).status).toBe(200);
    const open = await scrape(OPENMETRICS);
    expect(open.headers['content-type']).toMatch(/^application\/openmetrics-text/);
    expect(exemplars(open.text)).toEqual([]);
  });
});
