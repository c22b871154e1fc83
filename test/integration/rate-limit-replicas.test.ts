// Rate limits shared through a real Redis: N gateway processes enforce one limit together, not N times it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { waitFor, type GatewayProcess } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startReplicas, type Replicas } from '../../support/start-replicas.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';

const PEPPER = 'rate-limit-replicas-pepper';
let redis: PrivateRedis;
let backend: SampleBackend;
let replicas: GatewayProcess[];
let env: Record<string, string>;
let started: Replicas;

beforeAll(async () => {
  started = await startReplicas(3, { API_KEY_PEPPER: PEPPER });
  ({ redis, backend, replicas, env } = started);
});
afterAll(() => started?.stop());

async function keyLimitedTo(perMinute: number): Promise<string> {
  const created = await runKeysCli(['create', '--name', 'burst', '--environment', 'production', '--rate-limit-per-minute', String(perMinute), '--json'], env);
  return (JSON.parse(created.stdout) as { key: string }).key;
}

async function burst(targets: GatewayProcess[], key: string, count: number): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  for (let i = 0; i < count; i++) {
    const replica = targets[i % targets.length]!;
    const res = await fetch(`http://127.0.0.1:${replica.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  }
  return statuses;
}

describe('one limit across replicas', () => {
  it('two replicas together allow exactly the limit', async () => {
    const statuses = await burst(replicas.slice(0, 2), await keyLimitedTo(10), 30);
    expect(Object.fromEntries(statuses)).toEqual({ 200: 10, 429: 20 });
  });

  it('three replicas together allow exactly the limit', async () => {
    const statuses = await burst(replicas, await keyLimitedTo(12), 36);
    expect(Object.fromEntries(statuses)).toEqual({ 200: 12, 429: 24 });
  });

  it("operators can change a key's limit with set-limit, and every replica applies it", async () => {
    const created = await runKeysCli(['create', '--name', 'changing', '--environment', 'production', '--rate-limit-per-minute', '2', '--json'], env);
    const { id, key } = JSON.parse(created.stdout) as { id: string; key: string };
    expect(Object.fromEntries(await burst(replicas, key, 3))).toEqual({ 200: 2, 429: 1 });
    expect((await runKeysCli(['set-limit', id, '5'], env)).code).toBe(0);
    // The key event evicts the cached record, so the new limit applies within a second.
    await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${replicas[0]!.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
        await res.arrayBuffer();
        return res.status === 200;
      },
      1000,
      20,
    );
  });
});

describe('one quota across replica processes', () => {
  it('two replicas together admit exactly a daily quota, then refuse quota_exceeded until midnight UTC', async () => {
    const created = await runKeysCli(['create', '--name', 'partner', '--environment', 'production', '--quota-per-day', '7', '--json'], env);
    const { key } = JSON.parse(created.stdout) as { key: string };
    expect(Object.fromEntries(await burst(replicas.slice(0, 2), key, 12))).toEqual({ 200: 7, 429: 5 });
    const refused = await fetch(`http://127.0.0.1:${replicas[1]!.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
    const untilMidnight = Math.ceil((Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1) - Date.now()) / 1000);
    expect(((await refused.json()) as { code: string }).code).toBe('quota_exceeded');
    expect(Math.abs(Number(refused.headers.get('retry-after')) - untilMidnight)).toBeLessThanOrEqual(2);
  });
});

describe('windows and store failures, in process', () => {
  async function inProcessGateway(
    overrides: Record<string, unknown>,
    redisUrl: string,
  ): Promise<{ gateway: RedisGateway; key: string; close(): Promise<void> }> {
    const config = loadConfig(
      { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redisUrl, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production' },
      {
        shutdown: { drainDelayMs: 0, gracePeriodMs: 500 },
        ...overrides,
      },
    );
    const gateway = await startRedisGateway(config, { pepper: PEPPER });
    const { key } = await gateway.admin.create({ consumer: 'window', environments: ['production'] });
    return { gateway, key, close: () => gateway.close() };
  }

  const get = (gateway: RedisGateway, key: string) =>
    fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } }).then(async (res) => {
      await res.arrayBuffer();
      return res;
    });

  it('starts a fresh window once the old one has passed', async () => {
    const { gateway, key, close } = await inProcessGateway(
      { rateLimit: { windowMs: 1000, limits: { production: { default: 2 }, staging: { default: 2 } } } },
      redis.url,
    );
    try {
      expect((await get(gateway, key)).status).toBe(200);
      expect((await get(gateway, key)).status).toBe(200);
      expect((await get(gateway, key)).status).toBe(429);
      // The window lives in Redis (PEXPIRE): waiting for it is the behaviour under test.
      await waitFor(async () => (await get(gateway, key)).status === 200, 3000, 100);
    } finally {
      await close();
    }
  });

  it('lets requests through when the store is down and onStoreError is allow, and counts them', async () => {
    const own = await startRedis();
    const { gateway, key, close } = await inProcessGateway({ rateLimit: { onStoreError: 'allow' } }, own.url);
    try {
      expect((await get(gateway, key)).status).toBe(200); // caches the key record
      await own.kill();
      const res = await get(gateway, key);
      expect(res.status).toBe(200);
      const series = parseExposition(await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text());
      expect(series.get(seriesKey('petstore_gateway_rate_limit_store_errors_total', { environment: 'production' }))).toBe(1);
      expect(series.get(seriesKey('petstore_gateway_rate_limit_passed_total', { environment: 'production' }))).toBe(1);
    } finally {
      await close();
      await own.stop();
    }
  });

  it('answers 503 when the store is down and onStoreError is deny', async () => {
    const own = await startRedis();
    const { gateway, key, close } = await inProcessGateway({ rateLimit: { onStoreError: 'deny' } }, own.url);
    try {
      expect((await get(gateway, key)).status).toBe(200);
      await own.kill();
      const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await res.json()).toEqual({ code: 'service_unavailable', message: 'Rate limits cannot be checked right now; retry shortly', status: 503 });
    } finally {
      await close();
      await own.stop();
    }
  });
});
