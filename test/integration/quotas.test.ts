// Quotas per day and per month, counted exactly across two gateways on one real Redis, on Redis's clock, which the
// test moves (the exact store takes the periods from Redis's TIME; the gateways' clocks stay put).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { fixedClock } from '../../src/time/clock.ts';
import type { PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { startStoreRedis, type StoreRedis } from '../helpers/start-store-redis.ts';

const PEPPER = 'quota-test-pepper-0001';
/** 21:30 UTC: the day ends in 9000 s, the month (March 2030) 17 days and 9000 s later. */
const NOW = Date.parse('2030-03-14T21:30:00Z');
const clock = fixedClock(NOW);

let storeRedis: StoreRedis;
let redis: PrivateRedis;
let backend: SampleBackend;
let replicas: RedisGateway[] = [];

function configFor(overrides: Record<string, unknown> = {}) {
  return loadConfig(
    { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production' },
    { shutdown: { drainDelayMs: 0, gracePeriodMs: 500 }, ...overrides },
  );
}

async function startReplicas(count: number, overrides: Record<string, unknown> = {}): Promise<RedisGateway[]> {
  replicas = [];
  for (let index = 0; index < count; index++) replicas.push(await startRedisGateway(configFor(overrides), { pepper: PEPPER, clock }));
  return replicas;
}

beforeAll(async () => {
  storeRedis = await startStoreRedis({ at: NOW });
  redis = storeRedis.redis;
  backend = await startPetStore();
});
afterAll(async () => {
  await backend.close();
  await storeRedis.stop();
});
beforeEach(async () => {
  await Promise.all(replicas.map((replica) => replica.close()));
  replicas = [];
  await redis.client.flushall();
  storeRedis.setTime(NOW);
});

/** A production key with these quotas. */
async function keyWith(quotas: { quotaPerDay?: number; quotaPerMonth?: number; rateLimitPerMinute?: number }): Promise<{ id: string; key: string }> {
  const { key, record } = await replicas[0]!.admin.create({ consumer: 'partner', environments: ['production'], ...quotas });
  return { id: record.id, key };
}

async function call(replica: RedisGateway, key: string): Promise<Response> {
  const res = await fetch(`http://127.0.0.1:${replica.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
  await res.clone().arrayBuffer();
  return res;
}

/** `count` calls, alternating over the replicas, in order: each one's status. */
async function calls(key: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let index = 0; index < count; index++) statuses.push((await call(replicas[index % replicas.length]!, key)).status);
  return statuses;
}

describe('a daily quota across two replicas', () => {
  it('admits exactly the quota whichever replica serves, then refuses every call', async () => {
    await startReplicas(2);
    const { key } = await keyWith({ quotaPerDay: 5 });
    expect(await calls(key, 8)).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
  });

  it('refuses with quota_exceeded, Retry-After until midnight UTC and the quota in the RateLimit fields', async () => {
    await startReplicas(2);
    const { key } = await keyWith({ quotaPerDay: 2 });
    await calls(key, 2);
    const refused = await call(replicas[1]!, key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await refused.json()).toEqual({
      code: 'quota_exceeded',
      message: "The day's quota of 2 requests for this API key is used up; retry after the time in Retry-After",
      status: 429,
    });
    expect(refused.headers.get('retry-after')).toBe('9000');
    expect(refused.headers.get('ratelimit')).toMatch(/^"listPets"; r=597; t=\d+, "quota-day"; r=0; t=9000$/);
    expect(refused.headers.get('ratelimit-policy')).toMatch(/^"listPets"; q=600; w=60; pk=:[A-Za-z0-9+/=]+:, "quota-day"; q=2; w=86400; pk=:[A-Za-z0-9+/=]+:$/);
  });

  it('tells an admitted call what is left of the quota', async () => {
    await startReplicas(1);
    const { key } = await keyWith({ quotaPerDay: 10 });
    await calls(key, 3);
    const fourth = await call(replicas[0]!, key);
    expect(fourth.headers.get('ratelimit')).toMatch(/, "quota-day"; r=6; t=9000$/);
  });

  it('admits again once the next day begins', async () => {
    await startReplicas(2);
    const { key } = await keyWith({ quotaPerDay: 3 });
    expect(await calls(key, 4)).toEqual([200, 200, 200, 429]);
    storeRedis.setTime(Date.parse('2030-03-15T00:00:00Z'));
    expect(await calls(key, 4)).toEqual([200, 200, 200, 429]);
  });

  it('counts no quota for calls the per-minute limit refused', async () => {
    await startReplicas(2);
    const { id, key } = await keyWith({ quotaPerDay: 5, rateLimitPerMinute: 3 });
    const statuses = await calls(key, 6);
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    expect(await redis.client.get(`petstore-gateway:quota:{${id}}:day:2030-03-14`)).toBe('3');
  });

  it('counts the calls of many at once exactly', async () => {
    await startReplicas(2);
    const { key } = await keyWith({ quotaPerDay: 25 });
    const answers = await Promise.all(Array.from({ length: 40 }, (_, index) => call(replicas[index % 2]!, key)));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(25);
    const refusals = await Promise.all(answers.filter((answer) => answer.status === 429).map((answer) => answer.json()));
    expect(new Set(refusals.map((body) => (body as { code: string }).code))).toEqual(new Set(['quota_exceeded']));
  });
});

describe('replicas whose clocks differ, around midnight UTC of 31 December', () => {
  /** Redis's clock 5 s before the year ends; replica A's 2.5 min before Redis's, replica B's 2.5 min after it. */
  const REDIS_AT = Date.parse('2030-12-31T23:59:55Z');
  const skewed: RedisGateway[] = [];

  afterAll(async () => {
    await Promise.all(skewed.map((replica) => replica.close()));
  });

  it('give a 5-a-day key 5 calls in total and one Retry-After, both by Redis’s day', async () => {
    storeRedis.setTime(REDIS_AT);
    for (const at of ['2030-12-31T23:57:25Z', '2031-01-01T00:02:25Z']) {
      skewed.push(await startRedisGateway(configFor(), { pepper: PEPPER, clock: fixedClock(Date.parse(at)) }));
    }
    const { key, record } = await skewed[0]!.admin.create({ consumer: 'year-end', environments: ['production'], quotaPerDay: 5 });
    const answers: Response[] = [];
    for (let index = 0; index < 12; index++) answers.push(await call(skewed[index % 2]!, key));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429, 429, 429, 429]);
    const refused = answers.filter((answer) => answer.status === 429);
    // Calls alternate: both replicas refused, each telling the seconds to Redis's midnight, not to its own.
    expect(new Set(refused.map((answer) => answer.headers.get('retry-after')))).toEqual(new Set(['5']));
    expect(await redis.client.get(`petstore-gateway:quota:{${record.id}}:day:2030-12-31`)).toBe('5');
    expect(await redis.client.keys('petstore-gateway:quota:*:day:2031-*')).toEqual([]);
  });
});

describe('a monthly quota', () => {
  it('refuses until the month ends, even on the next day', async () => {
    await startReplicas(2);
    const { key } = await keyWith({ quotaPerDay: 10, quotaPerMonth: 3 });
    expect(await calls(key, 3)).toEqual([200, 200, 200]);
    const refused = await call(replicas[0]!, key);
    expect((await refused.json()) as object).toMatchObject({ code: 'quota_exceeded', status: 429 });
    // From 2030-03-14T21:30Z to 2030-04-01T00:00Z.
    expect(refused.headers.get('retry-after')).toBe(String(17 * 86_400 + 9000));
    storeRedis.setTime(Date.parse('2030-03-15T09:00:00Z'));
    expect(await calls(key, 1)).toEqual([429]);
    storeRedis.setTime(Date.parse('2030-04-01T00:00:00Z'));
    expect(await calls(key, 2)).toEqual([200, 200]);
  });

  it('lists both quotas in the RateLimit fields, the month with its own length', async () => {
    await startReplicas(1);
    const { key } = await keyWith({ quotaPerDay: 10, quotaPerMonth: 100 });
    const res = await call(replicas[0]!, key);
    expect(res.headers.get('ratelimit')).toMatch(/, "quota-day"; r=9; t=9000, "quota-month"; r=99; t=1477800$/);
    expect(res.headers.get('ratelimit-policy')).toMatch(/, "quota-day"; q=10; w=86400; pk=:[^:]+:, "quota-month"; q=100; w=2678400; pk=:[^:]+:$/);
  });
});

describe('keys without a quota', () => {
  it('are counted by the window alone, with no quota counter in Redis', async () => {
    await startReplicas(1);
    const { key } = await keyWith({});
    const res = await call(replicas[0]!, key);
    expect(res.headers.get('ratelimit')).toMatch(/^"listPets"; r=599; t=\d+$/);
    expect(await redis.client.keys('petstore-gateway:quota:*')).toEqual([]);
  });
});

describe('legacy X-RateLimit fields', () => {
  it('are absent unless an operator turns them on', async () => {
    await startReplicas(1);
    const { key } = await keyWith({ quotaPerDay: 4 });
    const res = await call(replicas[0]!, key);
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it('describe the policy with the fewest calls left: here the daily quota', async () => {
    await startReplicas(1, { rateLimit: { legacyHeaders: true } });
    const { key } = await keyWith({ quotaPerDay: 4 });
    const res = await call(replicas[0]!, key);
    expect(res.headers.get('x-ratelimit-limit')).toBe('4');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('3');
    expect(res.headers.get('x-ratelimit-reset')).toBe(String(Date.parse('2030-03-15T00:00:00Z') / 1000));
  });

  it('describe the window for a key without a quota', async () => {
    await startReplicas(1, { rateLimit: { legacyHeaders: true } });
    const { key } = await keyWith({});
    const res = await call(replicas[0]!, key);
    expect(res.headers.get('x-ratelimit-limit')).toBe('600');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('599');
    expect(Number(res.headers.get('x-ratelimit-reset'))).toBeGreaterThan(NOW / 1000);
  });
});
