// PetstoreGatewayKeyStoreEmptied's expression, asked of a real Prometheus scraping a gateway whose private Redis was flushed under it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { PROJECT_ROOT, waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';
import { startPrometheus, type PrivatePrometheus } from '../helpers/start-prometheus.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';

const PEPPER = 'key-store-emptied-alert-pepper-01';

/** The alert's expression as deploy/prometheus/alerts.yaml has it: what Prometheus evaluates, not a copy. */
const EXPR = (
  parseYaml(readFileSync(join(PROJECT_ROOT, 'deploy/prometheus/alerts.yaml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert?: string; expr: string }> }>;
  }
).groups
  .flatMap((group) => group.rules)
  .find((rule) => rule.alert === 'PetstoreGatewayKeyStoreEmptied')!.expr;

let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: RedisGateway;
let prometheus: PrivatePrometheus;

beforeAll(async () => {
  [redis, backend] = await Promise.all([startRedis(), startPetStore()]);
  const env = { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production' };
  gateway = await startRedisGateway(loadConfig(env, { shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 } }), { pepper: PEPPER });
  await gateway.admin.create({ consumer: 'acme', environments: ['production'] });
  prometheus = await startPrometheus([`127.0.0.1:${gateway.adminPort}`], 'key-store-emptied');
}, 60_000);
afterAll(async () => {
  await prometheus?.stop();
  await gateway?.close();
  await Promise.all([backend?.close(), redis?.stop()]);
});

const keysSeen = async () => (await prometheus.query('petstore_gateway_key_store_keys')).map((sample) => sample.value[1]);

it('stays quiet while the store holds keys, and fires once its Redis is flushed', async () => {
  // The watch reads the count every 5 s; Prometheus scrapes every second.
  await waitFor(async () => (await keysSeen()).includes('1'), 20_000, 250);
  expect(await prometheus.query(EXPR)).toEqual([]);
  await redis.client.flushall();
  await waitFor(async () => (await prometheus.query(EXPR)).length > 0, 20_000, 250);
  expect((await prometheus.query(EXPR)).map((sample) => sample.metric)).toEqual([{ environment: 'production' }]);
  expect(await keysSeen()).toEqual(['0']);
  expect((await prometheus.query('petstore_gateway_key_store_emptied_total')).map((sample) => sample.value[1])).toEqual(['1']);
}, 60_000);
