// Metrics after driving each operation and failure kind: the exact series and values an operator scrapes.
import request from 'supertest';
import packageJson from '../../package.json' with { type: 'json' };
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { startPetStore, startScriptedUpstream, refusedPort, type ScriptedUpstream } from '../../support/start-upstream.ts';

let backend: SampleBackend;
let gateway: TestGateway;
let series: Map<string, number>;
const env = { environment: 'production' };

beforeAll(async () => {
  backend = await startPetStore();
  gateway = buildTestGateway({ upstreamUrl: backend.baseUrl });
  const auth = `Bearer ${gateway.apiKey}`;
  const app = gateway.app;
  await request(app).get('/v1/pets?limit=2').set('Authorization', auth);
  await request(app).get('/v1/pets?limit=2').set('Authorization', auth);
  await request(app).post('/v1/pets').set('Authorization', auth).send({ name: 'Rex', categoryId: 1 });
  await request(app).get('/v1/pets/1').set('Authorization', auth);
  await request(app).get('/v1/pets/1').set('Authorization', auth);
  await request(app).get('/v1/pets/999').set('Authorization', auth);
  await request(app).get('/v1/pets?limit=0').set('Authorization', auth);
  await request(app).get('/v1/store/orders').set('Authorization', auth);
  await request(app).get('/v1/pets');
  await request(app).get('/v1/pets').set('Authorization', 'Basic x');
  await request(app)
    .get('/v1/pets')
    .set('Authorization', `Bearer psk_live_${'Z'.repeat(43)}`);
  const revoked = gateway.addKey({ revoked: true, consumer: 'gone' });
  await request(app).get('/v1/pets').set('Authorization', `Bearer ${revoked}`);
  const other = gateway.addKey({ id: 'key_other', consumer: 'beta' });
  await request(app).get('/v1/pets/2').set('Authorization', `Bearer ${other}`);
  series = parseExposition(await gateway.scrape());
});
afterAll(async () => {
  gateway.close();
  await backend.close();
});

const requests = (operation: string, method: string, status: number) =>
  seriesKey('petstore_gateway_requests_total', { operation, method, status_code: String(status), ...env });

describe('request metrics', () => {
  it('count requests per operation, method and status', () => {
    expect(series.get(requests('listPets', 'GET', 200))).toBe(2);
    expect(series.get(requests('createPet', 'POST', 201))).toBe(1);
    expect(series.get(requests('getPet', 'GET', 200))).toBe(3);
    expect(series.get(requests('getPet', 'GET', 404))).toBe(1);
    expect(series.get(requests('listPets', 'GET', 400))).toBe(1);
    expect(series.get(requests('listPets', 'GET', 401))).toBe(4);
  });

  it('count unmatched requests under operation="none", never the raw path', () => {
    expect(series.get(requests('none', 'GET', 404))).toBe(1);
    expect([...series.keys()].some((key) => key.includes('orders'))).toBe(false);
  });

  it('observe latency per operation in buckets from 0.5 ms to 10 s', () => {
    const labels = { operation: 'listPets', method: 'GET', status_code: '200', ...env };
    expect(series.get(seriesKey('petstore_gateway_request_duration_seconds_count', labels))).toBe(2);
    expect(series.get(seriesKey('petstore_gateway_request_duration_seconds_bucket', { ...labels, le: '10' }))).toBe(2);
    expect(series.has(seriesKey('petstore_gateway_request_duration_seconds_bucket', { ...labels, le: '0.0005' }))).toBe(true);
  });

  it("observe upstream time and the gateway's own overhead for proxied requests only", () => {
    const labels = { operation: 'getPet', ...env };
    expect(series.get(seriesKey('petstore_gateway_upstream_duration_seconds_count', labels))).toBe(4);
    expect(series.get(seriesKey('petstore_gateway_overhead_seconds_count', labels))).toBe(4);
    expect(series.get(seriesKey('petstore_gateway_upstream_duration_seconds_count', { operation: 'listPets', ...env }))).toBe(2);
  });

  it('are back to zero requests in flight', () => {
    expect(series.get(seriesKey('petstore_gateway_in_flight_requests', env))).toBe(0);
  });
});

describe('auth metrics', () => {
  it.each([
    ['missing', 1],
    ['malformed', 1],
    ['unknown', 1],
    ['revoked', 1],
  ])('count refusals for reason %s', (reason, count) => {
    expect(series.get(seriesKey('petstore_gateway_auth_refusals_total', { reason, ...env }))).toBe(count);
  });
});

describe('deprecation metrics', () => {
  it('count deprecated calls by consumer', () => {
    expect(series.get(seriesKey('petstore_gateway_deprecated_requests_total', { operation: 'getPet', key_id: 'key_primary', consumer: 'acme', ...env }))).toBe(
      3,
    );
    expect(series.get(seriesKey('petstore_gateway_deprecated_requests_total', { operation: 'getPet', key_id: 'key_other', consumer: 'beta', ...env }))).toBe(1);
  });

  it('export the sunset of each deprecated operation', () => {
    expect(series.get(seriesKey('petstore_gateway_operation_sunset_timestamp_seconds', { operation: 'getPet', ...env }))).toBe(
      Date.parse('2030-12-05T00:00:00Z') / 1000,
    );
  });

  it('export build info: the package version and the Node version', () => {
    expect(series.get(seriesKey('petstore_gateway_build_info', { version: packageJson.version, node_version: process.version, ...env }))).toBe(1);
  });
});

describe('upstream failure metrics', () => {
  let upstream: ScriptedUpstream;
  let failing: TestGateway;
  let failures: Map<string, number>;

  beforeAll(async () => {
    upstream = await startScriptedUpstream((req, res) => {
      if (req.url?.includes('limit=1')) req.socket.destroy();
      // limit=2: never answered (timeout)
      else if (!req.url?.includes('limit=2')) res.end('[]');
    });
    failing = buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { UPSTREAM_TIMEOUT_MS: '100' } });
    const auth = `Bearer ${failing.apiKey}`;
    await request(failing.app).get('/v1/pets?limit=1').set('Authorization', auth);
    await request(failing.app).get('/v1/pets?limit=2').set('Authorization', auth);
    const closedPort = await refusedPort();
    const refused = buildTestGateway({ upstreamUrl: `http://127.0.0.1:${closedPort}/v1` });
    await request(refused.app).get('/v1/pets/3').set('Authorization', `Bearer ${refused.apiKey}`);
    // Both registries hold every series (initialised at 0): add them up rather than let one hide the other.
    failures = new Map();
    for (const [key, value] of [...parseExposition(await failing.scrape()), ...parseExposition(await refused.scrape())]) {
      failures.set(key, (failures.get(key) ?? 0) + value);
    }
    refused.close();
  });
  afterAll(async () => {
    failing.close();
    await upstream.close();
  });

  it.each([
    ['listPets', 'reset'],
    ['listPets', 'headers_timeout'],
    ['getPet', 'refused'],
  ])('count %s failures of kind %s', (operation, kind) => {
    expect(failures.get(seriesKey('petstore_gateway_upstream_errors_total', { operation, kind, ...env }))).toBe(1);
  });

  it('count the 502 and 504 answers', () => {
    expect(failures.get(requests('listPets', 'GET', 502))).toBe(1);
    expect(failures.get(requests('listPets', 'GET', 504))).toBe(1);
    expect(failures.get(requests('getPet', 'GET', 502))).toBe(1);
  });
});

describe('the deprecated-consumer cap', () => {
  it('counts consumers past the cap as key_id="other"', async () => {
    const { createMetrics } = await import('../../src/observability/metrics.ts');
    const metrics = createMetrics({ environment: 'staging', version: 't', sunsets: [], processMetrics: false, deprecatedConsumerCap: 2 });
    for (const id of ['a', 'b', 'c', 'd', 'a']) metrics.deprecatedCall('getPet', `key_${id}`, `consumer-${id}`);
    const capped = parseExposition(await metrics.registry.metrics());
    const key = (key_id: string, consumer: string) =>
      seriesKey('petstore_gateway_deprecated_requests_total', { operation: 'getPet', key_id, consumer, environment: 'staging' });
    expect(capped.get(key('key_a', 'consumer-a'))).toBe(2);
    expect(capped.get(key('key_b', 'consumer-b'))).toBe(1);
    expect(capped.get(key('other', 'other'))).toBe(2);
  });
});
