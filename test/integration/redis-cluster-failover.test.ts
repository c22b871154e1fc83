// Two built gateways on a Redis Cluster of three primaries with replicas, each primary failed over under load:
// no call admitted over a limit or a quota, usage counts every call served once, revocation still reaches both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyAdmin } from '../../src/auth/key-admin.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { RedisUsageStore } from '../../src/observability/redis-usage-store.ts';
import { createRedisClient, type RedisClient } from '../../src/redis/connect.ts';
import { systemClock } from '../../src/time/clock.ts';
import { startCluster, type PrivateCluster } from '../../support/start-cluster.ts';
import { startGatewayProcess, waitFor, type GatewayProcess } from '../../support/start-gateway-process.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const PEPPER = 'cluster-failover-test-pepper-01';
/** A window longer than the test: the per-window limit is one budget for the whole run. */
const WINDOW_MS = 300_000;
const RATE_PER_MINUTE = 4;
/** RATE_PER_MINUTE over the window, as the gateway turns a per-minute limit into a per-window one. */
const WINDOW_LIMIT = (RATE_PER_MINUTE * WINDOW_MS) / 60_000;
const QUOTA_PER_DAY = 15;

type Name = 'limited' | 'quota' | 'plain' | 'revoked';

let cluster: PrivateCluster;
let backend: SampleBackend;
const gateways: GatewayProcess[] = [];
let client: RedisClient;
let admin: KeyAdmin;
const keys = {} as Record<Name, { id: string; key: string }>;
/** Answers by key and status over the whole run. */
const answers = {} as Record<Name, Record<number, number>>;

async function call(gateway: GatewayProcess, name: Name): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${keys[name].key}` } });
  await res.arrayBuffer();
  answers[name][res.status] = (answers[name][res.status] ?? 0) + 1;
  return res.status;
}

const served = (name: Name) => answers[name][200] ?? 0;

beforeAll(async () => {
  cluster = await startCluster({ replicas: 1 });
  backend = await startPetStore();
  const env = {
    REDIS_CLUSTER_NODES: cluster.nodes,
    UPSTREAM_URL: backend.baseUrl,
    GATEWAY_ENVIRONMENT: 'production',
    API_KEY_PEPPER: PEPPER,
    // Not counted: refused, never let through uncounted past a limit.
    RATE_LIMIT_ON_STORE_ERROR: 'deny',
    RATE_LIMIT_WINDOW_MS: String(WINDOW_MS),
    USAGE_FLUSH_MS: '100',
  };
  // One at a time into `gateways`: if the second fails to start, afterAll still stops the first.
  for (let started = 0; started < 2; started++) gateways.push(await startGatewayProcess(env));
  client = createRedisClient(
    {
      url: 'redis://unused',
      sentinels: [],
      sentinelName: 'mymaster',
      clusterNodes: cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
      password: null,
      commandTimeoutMs: 2000,
      connectTimeoutMs: 2000,
    },
    { role: 'subscriber', name: 'failover-test' },
  );
  admin = new KeyAdmin(client, { keyPrefix: 'petstore-gateway:', hashKey: createKeyHasher(PEPPER), clock: systemClock });
  const make = async (name: Name, limits: { rateLimitPerMinute: number; quotaPerDay?: number }) => {
    const made = await admin.create({ consumer: name, environments: ['production'], ...limits });
    keys[name] = { id: made.record.id, key: made.key };
    answers[name] = {};
  };
  await make('limited', { rateLimitPerMinute: RATE_PER_MINUTE });
  await make('quota', { rateLimitPerMinute: 100_000, quotaPerDay: QUOTA_PER_DAY });
  await make('plain', { rateLimitPerMinute: 100_000 });
  await make('revoked', { rateLimitPerMinute: 100_000 });
  // The key to revoke is in both gateways' caches before the failovers.
  for (const gateway of gateways) await waitFor(async () => (await call(gateway, 'revoked')) === 200, 10_000, 100);

  let loading = true;
  const loops = gateways.flatMap((gateway) =>
    (['limited', 'quota', 'plain'] as const).map(async (name) => {
      while (loading) await call(gateway, name);
    }),
  );
  try {
    await cluster.failOverEveryPrimary();
    // A little more load on the promoted primaries.
    const until = Date.now() + 1000;
    await waitFor(async () => Date.now() > until, 5000, 100);
  } finally {
    loading = false;
    await Promise.all(loops);
  }
}, 120_000);
afterAll(async () => {
  for (const gateway of gateways) await gateway.stop();
  client?.disconnect();
  await backend?.close();
  await cluster?.stop();
});

describe('a Redis Cluster primary failed over under load', () => {
  it('admits no call over the per-window limit', () => {
    expect(served('limited')).toBeGreaterThan(0);
    expect(served('limited')).toBeLessThanOrEqual(WINDOW_LIMIT);
  });

  it('admits no call over the daily quota', () => {
    expect(served('quota')).toBeGreaterThan(0);
    expect(served('quota')).toBeLessThanOrEqual(QUOTA_PER_DAY);
  });

  it('answers every other call 429 or, while a slot moved, 503: never anything else', () => {
    for (const name of ['limited', 'quota', 'plain'] as const)
      expect(Object.keys(answers[name]).every((status) => ['200', '429', '503'].includes(status))).toBe(true);
  });

  it('counts in usage exactly the calls served, each once', async () => {
    const store = new RedisUsageStore(client, { keyPrefix: 'petstore-gateway:', clock: systemClock, retentionDays: 400 });
    const today = new Date().toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const admitted = async (name: Name) => (await store.read(yesterday, today, keys[name].id)).reduce((sum, count) => sum + count.admitted, 0);
    const exact = async () =>
      (await Promise.all((['limited', 'quota', 'plain'] as const).map(async (name) => (await admitted(name)) === served(name)))).every(Boolean);
    await waitFor(exact, 10_000, 100);
    // Nothing lands late: every flush has been answered.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (const name of ['limited', 'quota', 'plain'] as const) expect(await admitted(name)).toBe(served(name));
  });

  it('still carries a revocation to both gateways', async () => {
    await admin.revoke(keys.revoked.id);
    for (const gateway of gateways) await waitFor(async () => (await call(gateway, 'revoked')) === 401, 5000, 50);
  });
});
