// A rate-limit store that cannot count, through the real pipeline: each onStoreError policy's answer, its counters and its log line.
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import type { LimitReading, LimitStore } from '../../src/limits/limit-store.ts';
import { RateLimitStoreUnavailableError } from '../../src/limits/rate-limit-store-failure.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { startPetStore } from '../../support/start-upstream.ts';

/** A limit store as the Redis store is while Redis is away. */
class UnreachableStore implements LimitStore {
  readonly countsInRedis = false;
  count(): Promise<LimitReading> {
    return Promise.reject(
      new RateLimitStoreUnavailableError('Redis could not count the rate-limit hits', { cause: new Error('connect ECONNREFUSED 127.0.0.1:6390') }),
    );
  }
}

let backend: SampleBackend;
let gateway: TestGateway;

beforeAll(async () => {
  backend = await startPetStore();
});
afterAll(async () => {
  await backend.close();
});
afterEach(async () => {
  await gateway.close();
});

function gatewayWith(onStoreError: 'allow' | 'deny'): TestGateway {
  return buildTestGateway({ upstreamUrl: backend.baseUrl, rateLimitStore: new UnreachableStore(), overrides: { rateLimit: { onStoreError } } });
}

const list = () => request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`);

async function counted(): Promise<{ storeErrors: number | undefined; passed: number | undefined }> {
  const series = parseExposition(await gateway.scrape());
  return {
    storeErrors: series.get(seriesKey('petstore_gateway_rate_limit_store_errors_total', { environment: 'production' })),
    passed: series.get(seriesKey('petstore_gateway_rate_limit_passed_total', { environment: 'production' })),
  };
}

describe('onStoreError allow', () => {
  it('lets the request through to the backend, with no RateLimit field', async () => {
    gateway = gatewayWith('allow');
    const before = backend.received.length;
    const res = await list();
    expect(res.status).toBe(200);
    expect([res.headers.ratelimit, res.headers['ratelimit-policy']]).toEqual([undefined, undefined]);
    expect(backend.received.length).toBe(before + 1);
  });

  it('counts each request as a store failure and as let through', async () => {
    gateway = gatewayWith('allow');
    for (let i = 0; i < 3; i++) await list();
    expect(await counted()).toEqual({ storeErrors: 3, passed: 3 });
  });

  it("logs the outage once for requests within 10 s, with Redis's error, the mode and the policy", async () => {
    gateway = gatewayWith('allow');
    for (let i = 0; i < 3; i++) await list();
    const lines = gateway.logs.filter((line) => line.msg === 'rate-limit store unreachable');
    expect(
      lines.map(({ level, mode, policy, err }) => ({
        level,
        mode,
        policy,
        err: { type: (err as { type: string }).type, message: (err as { message: string }).message },
      })),
    ).toEqual([{ level: 40, mode: 'exact', policy: 'allow', err: { type: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:6390' } }]);
  });
});

describe('onStoreError deny', () => {
  it('answers 503 with Retry-After and the Error body, without calling the backend', async () => {
    gateway = gatewayWith('deny');
    const before = backend.received.length;
    const res = await list();
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers.ratelimit).toBeUndefined();
    expect(res.body).toEqual({ code: 'service_unavailable', message: 'Rate limits cannot be checked right now; retry shortly', status: 503 });
    expect(backend.received.length).toBe(before);
  });

  it('counts each request as a store failure, none as let through', async () => {
    gateway = gatewayWith('deny');
    for (let i = 0; i < 3; i++) await list();
    expect(await counted()).toEqual({ storeErrors: 3, passed: 0 });
  });
});
