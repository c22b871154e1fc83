// Exact rate limiting against a real Redis: every hit counted there before its request goes on, one command per busy key per turn.
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import type { LimitPolicy } from '../../src/limits/limit-store.ts';
import { periodAt } from '../../src/limits/quota-periods.ts';
import { RedisRateLimitStore } from '../../src/limits/redis-rate-limit-store.ts';
import { RateLimitStoreUnavailableError } from '../../src/limits/rate-limit-store-failure.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { startStoreRedis, type StoreRedis } from '../helpers/start-store-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const WINDOW_MS = 60_000;
const NOW = Date.parse('2026-11-22T12:00:00Z');

let redis: PrivateRedis;
let storeRedis: StoreRedis;

beforeAll(async () => {
  // Redis's clock at NOW (frozen): the quotas' periods are Redis's.
  storeRedis = await startStoreRedis({ at: NOW });
  redis = storeRedis.redis;
});
afterAll(() => storeRedis.stop());
beforeEach(() => storeRedis.empty());

/** One replica's store on its own request-path connection (ready: such a client never queues a command). */
async function replica(url = redis.url): Promise<RedisRateLimitStore> {
  const client = await storeRedis.connect('exact-rate-limit-test', url);
  return new RedisRateLimitStore(client, { prefix: 'test:rate:', clock: fixedClock(NOW) });
}

/** A key without quotas, its operation's limit far away. */
const windowOnly = (key: string): LimitPolicy => ({ keyId: key.split(':')[0]!, windowMs: WINDOW_MS, perWindow: 100 });

/** One request of `key` counted by `store`. */
const hit = (store: RedisRateLimitStore, key: string, policy = windowOnly(key)) => store.count(key, policy);

/** How many times Redis ran a command, scripts' own calls included (INFO commandstats). */
async function callsOf(command: string): Promise<number> {
  const stats = await redis.client.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
}

describe('exact rate limiting', () => {
  it('counts the hits of one turn for one key with one command, each request seeing its own count', async () => {
    const store = await replica();
    const infos = await Promise.all([1, 2, 3, 4, 5].map(() => hit(store, 'key_a:listPets')));
    expect(infos.map((info) => info.hits)).toEqual([1, 2, 3, 4, 5]);
    expect(await callsOf('incrby')).toBe(1);
    expect(await redis.client.get('test:rate:key_a:listPets')).toBe('5');
  });

  it('sends the next turn its own command, counting on from the total', async () => {
    const store = await replica();
    await Promise.all([hit(store, 'key_a:listPets'), hit(store, 'key_a:listPets')]);
    const next = await Promise.all([hit(store, 'key_a:listPets'), hit(store, 'key_a:listPets')]);
    expect(next.map((info) => info.hits)).toEqual([3, 4]);
    expect(await callsOf('incrby')).toBe(2);
  });

  it('counts each key of a turn apart', async () => {
    const store = await replica();
    const [a1, b1, a2] = await Promise.all([hit(store, 'key_a:listPets'), hit(store, 'key_b:listPets'), hit(store, 'key_a:listPets')]);
    expect([a1.hits, b1.hits, a2.hits]).toEqual([1, 1, 2]);
    expect(await callsOf('incrby')).toBe(2);
  });

  it('starts the window on the first hit and tells when it resets', async () => {
    const store = await replica();
    const [first] = await Promise.all([hit(store, 'key_a:listPets')]);
    const ttl = await redis.client.pttl('test:rate:key_a:listPets');
    expect(ttl).toBeGreaterThan(WINDOW_MS - 5000);
    expect(ttl).toBeLessThanOrEqual(WINDOW_MS);
    // The reset is the clock's now plus the TTL Redis reported.
    expect(first!.at).toBe(NOW);
    expect(first!.windowEndsAt - NOW).toBeGreaterThan(WINDOW_MS - 5000);
    expect(first!.windowEndsAt - NOW).toBeLessThanOrEqual(WINDOW_MS);
  });

  it('counts a turn of a key with quotas, window and quotas, with one command, each request told its own quota', async () => {
    const store = await replica();
    const policy: LimitPolicy = { keyId: 'key_q', windowMs: WINDOW_MS, perWindow: 100, perDay: 3, perMonth: 50 };
    const infos = await Promise.all([1, 2, 3, 4].map(() => hit(store, 'key_q:listPets', policy)));
    expect(infos.map((info) => info.hits)).toEqual([1, 2, 3, 4]);
    expect(infos.map(({ quota }) => [quota?.day?.used, quota?.month?.used, quota?.refused])).toEqual([
      [1, 1, undefined],
      [2, 2, undefined],
      [3, 3, undefined],
      [3, 3, 'day'],
    ]);
    expect((await callsOf('evalsha')) + (await callsOf('eval'))).toBe(1);
    expect(await redis.client.get('test:rate:quota:{key_q}:day:2026-11-22')).toBe('3');
    expect(await redis.client.get('test:rate:quota:{key_q}:month:2026-11')).toBe('3');
    expect(await redis.client.get('test:rate:{key_q}:listPets')).toBe('4');
  });

  it('keeps a quota counter a day past its period, by Redis’s clock', async () => {
    const store = await replica();
    await hit(store, 'key_q:listPets', { keyId: 'key_q', windowMs: WINDOW_MS, perWindow: 100, perDay: 3 });
    const ttl = await redis.client.pttl('test:rate:quota:{key_q}:day:2026-11-22');
    // 12:00 UTC: twelve hours to midnight, and the day of grace.
    expect(ttl).toBeGreaterThan(36 * 3_600_000 - 5000);
    expect(ttl).toBeLessThanOrEqual(36 * 3_600_000);
  });

  it('names and ends the quotas’ periods by Redis’s clock as UTC’s calendar does, whatever the instant', async () => {
    const store = await replica();
    let keyNumber = 0;
    await fc.assert(
      fc.asyncProperty(
        // Whole seconds (Redis's clock is set so) from 1970 to 2199, month ends and leap days drawn often.
        fc.oneof(
          fc.integer({ min: 0, max: 7_258_118_399 }),
          fc.constantFrom(951_868_799, 951_868_800, 4_107_542_399, 1_798_761_599, 1_798_761_600, 1_709_251_199),
        ),
        async (seconds) => {
          const instant = seconds * 1000;
          storeRedis.setTime(instant);
          const keyId = `key_cal${keyNumber++}`;
          const { at, quota } = await hit(store, `${keyId}:listPets`, { keyId, windowMs: WINDOW_MS, perWindow: 100, perDay: 5, perMonth: 50 });
          const [day, month] = [periodAt('day', instant), periodAt('month', instant)];
          // The ends are placed on the gateway's clock (NOW) by their distance from Redis's now.
          expect([quota?.day?.endsAt, quota?.month?.endsAt]).toEqual([at + day.endsAt - instant, at + month.endsAt - instant]);
          expect(await redis.client.get(`test:rate:quota:{${keyId}}:day:${day.name}`)).toBe('1');
          expect(await redis.client.get(`test:rate:quota:{${keyId}}:month:${month.name}`)).toBe('1');
        },
      ),
      { numRuns: 150 },
    );
    storeRedis.setTime(NOW);
  });

  it('gives the requests of two replicas in the same instant distinct counts', async () => {
    const [a, b] = [await replica(), await replica()];
    const infos = await Promise.all([a, b, a, b, a, b].map((store) => hit(store, 'key_a:listPets')));
    expect(infos.map((info) => info.hits).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("rejects every request of a failed command as uncounted, with Redis's error as the cause and nothing of HTTP", async () => {
    const own = await startRedis();
    const store = await replica(own.url);
    await own.kill();
    const outcomes = await Promise.allSettled([hit(store, 'key_a:listPets'), hit(store, 'key_a:listPets')]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    for (const outcome of outcomes) {
      const reason = (outcome as PromiseRejectedResult).reason as RateLimitStoreUnavailableError;
      expect(reason).toBeInstanceOf(RateLimitStoreUnavailableError);
      expect(reason.cause).toBeInstanceOf(Error);
      expect(reason).not.toHaveProperty('status');
      expect(reason).not.toHaveProperty('headers');
    }
    await own.stop();
  });
});

describe('exact limits under concurrent requests', () => {
  let backend: SampleBackend;
  let gateway: RedisGateway;

  beforeAll(async () => {
    backend = await startPetStore();
    const config = loadConfig(
      { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production' },
      { shutdown: { drainDelayMs: 0, gracePeriodMs: 500 } },
    );
    gateway = await startRedisGateway(config, { pepper: 'rate-limit-exact-pepper' });
  });
  afterAll(async () => {
    await gateway.close();
    await backend.close();
  });

  it('lets exactly the limit through when the requests arrive at once, each told what is left', async () => {
    const { key } = await gateway.admin.create({ consumer: 'burst', environments: ['production'], rateLimitPerMinute: 10 });
    const responses = await Promise.all(
      Array.from({ length: 25 }, () => fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } })),
    );
    await Promise.all(responses.map((res) => res.arrayBuffer()));
    const passed = responses.filter((res) => res.status === 200);
    expect(passed).toHaveLength(10);
    expect(responses.filter((res) => res.status === 429)).toHaveLength(15);
    // Remaining 9 down to 0, each once: no two requests were given the same count.
    const remaining = passed.map((res) => Number(/r=(\d+)/.exec(res.headers.get('ratelimit') ?? '')?.[1])).sort((x, y) => x - y);
    expect(remaining).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
