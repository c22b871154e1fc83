// Redis Cluster: keys, revocation events, rate-limit counters and the shadow report work across the cluster's slots.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KeyAdmin } from '../../src/auth/key-admin.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { createRedisShadowReport, redisShadowReportReader } from '../../src/shadow/report-store.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { startCluster, type PrivateCluster } from '../../support/start-cluster.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { startPetStore } from '../../support/start-upstream.ts';

let cluster: PrivateCluster;
let backend: SampleBackend;
let gateway: RedisGateway;
let admin: KeyAdmin;

beforeAll(async () => {
  cluster = await startCluster();
  backend = await startPetStore();
  const config = loadConfig(
    { PORT: '0', ADMIN_PORT: '0', REDIS_CLUSTER_NODES: cluster.nodes, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production' },
    { shutdown: { drainDelayMs: 0, gracePeriodMs: 500 } },
  );
  gateway = await startRedisGateway(config, { pepper: 'cluster-test-pepper-01' });
  admin = gateway.admin;
}, 60_000);
afterAll(async () => {
  await gateway?.close();
  await backend?.close();
  await cluster?.stop();
});

const status = async (key: string) => {
  const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
};

it('authenticates, rate-limits and revokes with keys in a Redis Cluster', async () => {
  const issued = await admin.create({ consumer: 'cluster', environments: ['production'], rateLimitPerMinute: 3 });
  expect(await status(issued.key)).toBe(200);
  expect(await status(issued.key)).toBe(200);
  expect(await status(issued.key)).toBe(200);
  expect(await status(issued.key)).toBe(429);
  expect(await status(`psk_live_${'K'.repeat(43)}`)).toBe(401);
  expect((await admin.list()).records.map((record) => record.id)).toContain(issued.record.id);

  const other = await admin.create({ consumer: 'cluster-2', environments: ['production'] });
  expect(await status(other.key)).toBe(200);
  await admin.revoke(other.record.id);
  await waitFor(async () => (await status(other.key)) === 401, 1000, 20);
});

it('adds shadow comparisons in one script and reads them back from a Redis Cluster (one slot: {shadow})', async () => {
  const at = Date.parse('2030-03-14T10:20:00Z');
  const options = { keyPrefix: 'petstore-gateway:', clock: fixedClock(at), retentionDays: 30 };
  const replicas = [0, 1].map(() => createRedisShadowReport(gateway.redis.client, { ...options, flushIntervalMs: 60_000 }));
  replicas[0]!.record({ operation: 'getPet', result: 'differ', differences: [{ pointer: '/name', kind: 'missing' }], noise: [], at });
  replicas[1]!.record({ operation: 'listPets', result: 'match', differences: [], noise: [{ pointer: '/at', kind: 'value' }], at });
  replicas[1]!.noteNoise({ operation: 'listPets', pointer: '/at', kind: 'value', at });
  for (const replica of replicas) await replica.close();
  const report = await redisShadowReportReader(gateway.redis.client, options).read({ from: at, to: at + 1 });
  expect(
    report.operations.map(({ operation, results, differences, noise, learntNoise }) => [
      operation,
      results.differ,
      results.match,
      differences.length,
      noise.length,
      learntNoise.length,
    ]),
  ).toEqual([
    ['getPet', 1, 0, 1, 0, 0],
    ['listPets', 0, 1, 0, 1, 1],
  ]);
});
