// Authentication against keys in a real Redis: scoping, expiry, caching, revocation, and Redis outages.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { KeyAdmin } from '../../src/auth/key-admin.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { fixedClock } from '../../src/time/clock.ts';
import type { RedisStores } from '../../src/wiring/redis-stores.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const PEPPER = 'redis-auth-test-pepper-01';
const CACHE_TTL_MS = 30_000;

let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: RedisGateway;
let keys: RedisStores;
let admin: KeyAdmin;
const clock = fixedClock(TEST_NOW);

beforeAll(async () => {
  redis = await startRedis();
  backend = await startPetStore();
  const config = loadConfig(
    { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production' },
    { shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 }, auth: { cache: { ttlMs: CACHE_TTL_MS, negativeTtlMs: 5000 } } },
  );
  gateway = await startRedisGateway(config, { pepper: PEPPER, clock });
  keys = gateway.redis;
  admin = gateway.admin;
});
beforeEach(() => clock.set(TEST_NOW));
afterAll(async () => {
  await gateway.close();
  await backend.close();
  await redis.stop();
});

function listPets(key: string) {
  return fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
}

async function hgetallCalls(): Promise<number> {
  const stats = await redis.client.info('commandstats');
  return Number(/cmdstat_hgetall:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

describe('keys stored in Redis', () => {
  it("accepts a key valid in the gateway's environment", async () => {
    const { key } = await admin.create({ consumer: 'acme', environments: ['production'] });
    expect((await listPets(key)).status).toBe(200);
  });

  it('accepts a key valid in both environments', async () => {
    const { key } = await admin.create({ consumer: 'acme', environments: ['staging', 'production'] });
    expect((await listPets(key)).status).toBe(200);
  });

  it('refuses a staging key at the production gateway', async () => {
    const { key } = await admin.create({ consumer: 'acme', environments: ['staging'] });
    const res = await listPets(key);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ code: 'unauthorized', message: 'The API key is not valid in this environment', status: 401 });
  });

  it('refuses a key from its expiry on, even while its record is cached', async () => {
    const { key } = await admin.create({ consumer: 'acme', environments: ['production'], expiresAt: new Date(TEST_NOW + 60_000).toISOString() });
    expect((await listPets(key)).status).toBe(200);
    clock.set(TEST_NOW + 60_000);
    const res = await listPets(key);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ code: 'unauthorized', message: 'The API key has expired', status: 401 });
  });
});

describe('the key cache', () => {
  it('asks Redis once for a key used many times', async () => {
    const { key } = await admin.create({ consumer: 'acme', environments: ['production'] });
    const before = await hgetallCalls();
    for (let i = 0; i < 20; i++) expect((await listPets(key)).status).toBe(200);
    expect((await hgetallCalls()) - before).toBe(1);
  });

  it('asks Redis once for concurrent first uses of a key', async () => {
    const { key } = await admin.create({ consumer: 'acme', environments: ['production'] });
    const before = await hgetallCalls();
    const statuses = await Promise.all(Array.from({ length: 20 }, async () => (await listPets(key)).status));
    expect(statuses.every((status) => status === 200)).toBe(true);
    expect((await hgetallCalls()) - before).toBe(1);
  });

  it('caches unknown keys too, so a flood of one bad key is one lookup', async () => {
    const bad = `psk_live_${'B'.repeat(43)}`;
    const before = await hgetallCalls();
    for (let i = 0; i < 20; i++) expect((await listPets(bad)).status).toBe(401);
    expect((await hgetallCalls()) - before).toBe(1);
  });

  it('reads Redis again once the cache entry is older than its TTL', async () => {
    const { key } = await admin.create({ consumer: 'acme', environments: ['production'] });
    await listPets(key);
    const before = await hgetallCalls();
    clock.set(TEST_NOW + CACHE_TTL_MS + 1);
    expect((await listPets(key)).status).toBe(200);
    expect((await hgetallCalls()) - before).toBe(1);
  });
});

describe('revocation', () => {
  it('reaches the gateway within a second although the key is cached', async () => {
    const issued = await admin.create({ consumer: 'acme', environments: ['production'] });
    expect((await listPets(issued.key)).status).toBe(200);
    await admin.revoke(issued.record.id);
    const tookMs = await waitFor(async () => (await listPets(issued.key)).status === 401, 1000, 10);
    expect(tookMs).toBeLessThan(1000);
    expect(await (await listPets(issued.key)).json()).toEqual({ code: 'unauthorized', message: 'The API key has been revoked', status: 401 });
  });
});

describe("the admin listener's /metrics", () => {
  it('reports Redis and the upstream up, key cache hits and misses, and process metrics', async () => {
    const { key } = await admin.create({ consumer: 'acme', environments: ['production'] });
    await listPets(key);
    await listPets(key);
    const res = await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const series = parseExposition(await res.text());
    expect(series.get(seriesKey('petstore_gateway_dependency_up', { dependency: 'redis', environment: 'production' }))).toBe(1);
    expect(series.get(seriesKey('petstore_gateway_dependency_up', { dependency: 'upstream', environment: 'production' }))).toBe(1);
    expect(series.get(seriesKey('petstore_gateway_key_cache_lookups_total', { result: 'hit', environment: 'production' }))).toBeGreaterThanOrEqual(1);
    expect(series.get(seriesKey('petstore_gateway_key_cache_lookups_total', { result: 'miss', environment: 'production' }))).toBeGreaterThanOrEqual(1);
    expect(series.has(seriesKey('petstore_gateway_process_resident_memory_bytes', { environment: 'production' }))).toBe(true);
  });

  it('is not served on the public port', async () => {
    expect((await fetch(`http://127.0.0.1:${gateway.port}/metrics`)).status).toBe(404);
  });
});

describe('when Redis goes away', () => {
  it('fails closed for uncached keys, keeps cached ones until their TTL, stays ready with Redis failing in /readyz, and recovers by itself', async () => {
    const cached = await admin.create({ consumer: 'acme', environments: ['production'] });
    const uncached = await admin.create({ consumer: 'acme', environments: ['production'] });
    expect((await listPets(cached.key)).status).toBe(200);

    // Traffic keeps flowing through the outage: every answer is a pass for a valid cached key or a 503, never a crash.
    const statuses = new Set<number>();
    let flowing = true;
    const traffic = (async () => {
      while (flowing) {
        const [a, b] = await Promise.all([listPets(cached.key), listPets(`psk_live_${'T'.repeat(43)}`)]);
        statuses.add(a.status).add(b.status);
      }
    })();

    await redis.kill();
    await waitFor(async () => !keys.isRedisAvailable());

    const refused = await listPets(uncached.key);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await refused.json()).toEqual({ code: 'service_unavailable', message: 'API keys cannot be checked right now; retry shortly', status: 503 });
    expect((await listPets(`psk_live_${'C'.repeat(43)}`)).status).toBe(503);

    expect((await listPets(cached.key)).status).toBe(200);
    clock.set(TEST_NOW + CACHE_TTL_MS + 1);
    expect((await listPets(cached.key)).status).toBe(503);

    const scraped = parseExposition(await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text());
    expect(scraped.get(seriesKey('petstore_gateway_dependency_up', { dependency: 'redis', environment: 'production' }))).toBe(0);

    // Still ready: Redis is shared by every replica, and emptying the load balancer would turn these answers into connection errors.
    const ready = await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', checks: { pepper: 'ok', redis: 'failing' } });
    expect((await fetch(`http://127.0.0.1:${gateway.adminPort}/healthz`)).status).toBe(200);

    // The restarted Redis is empty (no persistence here): a key created now must work, with no gateway restart.
    await redis.restart();
    await waitFor(async () => keys.isRedisAvailable());
    const fresh = await admin.create({ consumer: 'acme', environments: ['production'] });
    expect((await listPets(fresh.key)).status).toBe(200);
    flowing = false;
    await traffic;
    // 401 for the unknown key (and, once the empty Redis is back, for keys it no longer holds).
    for (const status of statuses) expect([200, 401, 503]).toContain(status);
    expect(statuses.has(503)).toBe(true);
  });
});
