// Local-first rate limiting: counted in process, synchronised with a real Redis in batches; its accuracy across replicas.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LimitPolicy } from '../../src/limits/limit-store.ts';
import { LocalFirstRateLimitStore } from '../../src/limits/local-first-rate-limit-store.ts';
import { RateLimitStoreUnavailableError } from '../../src/limits/rate-limit-store-failure.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import type { PrivateRedis } from '../../support/start-redis.ts';
import { startRedisGateway } from '../helpers/start-redis-gateway.ts';
import { startStoreRedis, type StoreRedis } from '../helpers/start-store-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const WINDOW_MS = 60_000;
/** Synchronisation is driven by the test (sync()); the timer's own period is out of the way. */
const SYNC_MS = 3_600_000;
const WINDOW_START = Date.parse('2026-11-21T12:00:00Z');

let redis: PrivateRedis;
let storeRedis: StoreRedis;

beforeAll(async () => {
  storeRedis = await startStoreRedis();
  redis = storeRedis.redis;
});
afterAll(() => storeRedis.stop());
beforeEach(() => storeRedis.empty());

/** One replica's store: its own connection (ready: the request path never queues commands), on the shared clock. */
async function replica(clock: ReturnType<typeof fixedClock>, errors: unknown[] = []): Promise<LocalFirstRateLimitStore> {
  const client = await storeRedis.connect('local-first-test');
  return new LocalFirstRateLimitStore(client, { prefix: 'test:rate:', clock, syncMs: SYNC_MS, onError: (error) => errors.push(error) });
}

/** A key without quotas, its operation's limit far away. */
const windowOnly = (key: string): LimitPolicy => ({ keyId: key.split(':')[0]!, windowMs: WINDOW_MS, perWindow: 100 });

describe('local-first rate limiting', () => {
  it('answers from the process without waiting for Redis, counting each hit', async () => {
    const store = await replica(fixedClock(WINDOW_START + 1000));
    expect([1, 2, 3].map(() => store.count('key_a:listPets', windowOnly('key_a:listPets')).hits)).toEqual([1, 2, 3]);
    expect(store.count('key_a:listPets', windowOnly('key_a:listPets')).windowEndsAt).toBe(WINDOW_START + WINDOW_MS);
  });

  it('adds up two replicas exactly once both have synchronised', async () => {
    const clock = fixedClock(WINDOW_START + 1000);
    const [a, b] = [await replica(clock), await replica(clock)];
    for (let i = 0; i < 3; i++) a.count('key_a:listPets', windowOnly('key_a:listPets'));
    b.count('key_a:listPets', windowOnly('key_a:listPets'));
    await a.sync();
    await b.sync();
    expect(await redis.client.get(`test:rate:key_a:listPets:${WINDOW_START}`)).toBe('4');
    // B learnt the total from its own synchronisation; A learns it at its next one.
    expect(b.count('key_a:listPets', windowOnly('key_a:listPets')).hits).toBe(5);
    await b.sync();
    a.count('key_a:listPets', windowOnly('key_a:listPets'));
    await a.sync();
    expect(a.count('key_a:listPets', windowOnly('key_a:listPets')).hits).toBe(7);
  });

  it('lets a key over its limit by at most what the other replica counted since its last synchronisation', async () => {
    const clock = fixedClock(WINDOW_START + 1000);
    const [a, b] = [await replica(clock), await replica(clock)];
    const limit = 10;
    const perInterval = 3;
    let allowed = 0;
    // Both replicas serve the key in turns; each synchronises after every `perInterval` hits of its own.
    for (let interval = 0; interval < 5; interval++) {
      for (const store of [a, b]) {
        for (let i = 0; i < perInterval; i++) if (store.count('key_b:listPets', windowOnly('key_b:listPets')).hits <= limit) allowed++;
        await store.sync();
      }
    }
    expect(allowed).toBeGreaterThanOrEqual(limit);
    expect(allowed).toBeLessThanOrEqual(limit + (2 - 1) * perInterval);
  });

  it('starts a new count in the next window, on every replica alike', async () => {
    const clock = fixedClock(WINDOW_START + WINDOW_MS - 1);
    const store = await replica(clock);
    store.count('key_c:listPets', windowOnly('key_c:listPets'));
    store.count('key_c:listPets', windowOnly('key_c:listPets'));
    clock.set(WINDOW_START + WINDOW_MS);
    expect(store.count('key_c:listPets', windowOnly('key_c:listPets'))).toEqual({
      at: WINDOW_START + WINDOW_MS,
      hits: 1,
      windowEndsAt: WINDOW_START + 2 * WINDOW_MS,
      quota: undefined,
    });
  });

  it('keeps counting while Redis is away and sends the hits when it is back', async () => {
    const clock = fixedClock(WINDOW_START + 1000);
    const errors: unknown[] = [];
    const store = await replica(clock, errors);
    await redis.kill();
    store.count('key_d:listPets', windowOnly('key_d:listPets'));
    store.count('key_d:listPets', windowOnly('key_d:listPets'));
    await store.sync();
    expect(errors.length).toBeGreaterThan(0);
    expect(store.count('key_d:listPets', windowOnly('key_d:listPets')).hits).toBe(3);
    await redis.restart();
    // The request-path client reconnects by itself (back-off of at most 2 s).
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && (await redis.client.get(`test:rate:key_d:listPets:${WINDOW_START}`)) !== '3') {
      await store.sync();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await redis.client.get(`test:rate:key_d:listPets:${WINDOW_START}`)).toBe('3');
    // Checked once Redis is back, so that a failure here leaves it running for the next test.
    expect(errors[0]).toBeInstanceOf(RateLimitStoreUnavailableError);
  });
});

describe('local-first quotas', () => {
  const POLICY: LimitPolicy = { keyId: 'key_q', windowMs: WINDOW_MS, perWindow: 100, perDay: 3 };

  /** One request of key_q under its policy: its quota reading. */
  function counted(store: LocalFirstRateLimitStore) {
    return store.count('key_q:listPets', POLICY).quota;
  }

  it('refuses past the quota in process, before any synchronisation', async () => {
    const store = await replica(fixedClock(WINDOW_START + 1000));
    const readings = [1, 2, 3, 4].map(() => counted(store));
    expect(readings.map((reading) => reading?.refused)).toEqual([undefined, undefined, undefined, 'day']);
  });

  /** Two replicas that admitted three calls of key_q, two on `a` then one on `b`, each synchronised after. */
  async function threeCallsOnTwoReplicas() {
    const clock = fixedClock(WINDOW_START + 1000);
    const [a, b] = [await replica(clock), await replica(clock)];
    counted(a);
    counted(a);
    await a.sync();
    counted(b);
    await b.sync();
    return a;
  }

  it("sends the admitted calls to the quota's counter, which every replica adds to", async () => {
    await threeCallsOnTwoReplicas();
    expect(await redis.client.get('test:rate:quota:{key_q}:day:2026-11-21')).toBe('3');
  });

  it("learns the other replica's calls at its next synchronisation: over by at most what they admitted meanwhile", async () => {
    const a = await threeCallsOnTwoReplicas();
    // a still counts 2 of 3: it admits one more (the bound), and learns the total of 4 when it sends it.
    expect(counted(a)?.refused).toBeUndefined();
    await a.sync();
    expect(await redis.client.get('test:rate:quota:{key_q}:day:2026-11-21')).toBe('4');
    expect(counted(a)?.refused).toBe('day');
  });
});

describe('a gateway with RATE_LIMIT_MODE=local-first', () => {
  it('refuses past the limit without a Redis command per request, and sends its counts to Redis', async () => {
    const backend = await startPetStore();
    const config = loadConfig(
      { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production', RATE_LIMIT_MODE: 'local-first' },
      { shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 }, rateLimit: { syncMs: 50 } },
    );
    const gateway = await startRedisGateway(config, { pepper: 'local-first-pepper-0001' });
    try {
      const { key, record } = await gateway.admin.create({ consumer: 'acme', environments: ['production'], rateLimitPerMinute: 3 });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
      // Synchronised every 50 ms: the four hits (the refused one included) reach Redis in one or more batches.
      const counterKey = async () => (await redis.client.keys(`petstore-gateway:rate:${record.id}:listPets:*`))[0];
      await waitFor(async () => {
        const counter = await counterKey();
        return counter !== undefined && (await redis.client.get(counter)) === '4';
      }, 2000);
      expect(await redis.client.keys(`petstore-gateway:rate:${record.id}:listPets:*`)).toHaveLength(1);
    } finally {
      await gateway.close();
      await backend.close();
    }
  });
});
