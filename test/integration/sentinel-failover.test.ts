// Redis Sentinel: the primary is killed under steady traffic; authentication and rate limits carry on after the failover.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KeyAdmin } from '../../src/auth/key-admin.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { startSentinels, type PrivateSentinels } from '../../support/start-sentinel.ts';
import { startPetStore } from '../../support/start-upstream.ts';

let sentinels: PrivateSentinels;
let backend: SampleBackend;
let gateway: RedisGateway;
let admin: KeyAdmin;

beforeAll(async () => {
  sentinels = await startSentinels();
  backend = await startPetStore();
  const env = {
    PORT: '0',
    ADMIN_PORT: '0',
    REDIS_SENTINELS: sentinels.sentinels,
    REDIS_SENTINEL_NAME: sentinels.name,
    UPSTREAM_URL: backend.baseUrl,
    GATEWAY_ENVIRONMENT: 'production',
  };
  // Short cache lifetimes, so that keys are looked up in Redis throughout the failover.
  const config = loadConfig(env, { shutdown: { drainDelayMs: 0, gracePeriodMs: 500 }, auth: { cache: { ttlMs: 200, negativeTtlMs: 200 } } });
  gateway = await startRedisGateway(config, { pepper: 'sentinel-failover-pepper' });
  admin = gateway.admin;
}, 120_000);

afterAll(async () => {
  await gateway?.close();
  await backend?.close();
  await sentinels?.stop();
});

async function status(key: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

it('keeps refusing unknown keys and recovers authentication and rate limiting after the primary is killed', async () => {
  const valid = await admin.create({ consumer: 'steady', environments: ['production'] });
  const limited = await admin.create({ consumer: 'limited', environments: ['production'], rateLimitPerMinute: 1000 });
  const unknown = `psk_live_${'U'.repeat(43)}`;
  expect(await status(valid.key)).toBe(200);

  const seen = { valid: new Map<number, number>(), unknown: new Map<number, number>() };
  let firstFailure: number | undefined;
  let lastFailure: number | undefined;
  let flowing = true;
  const traffic = (async () => {
    while (flowing) {
      const [validStatus, unknownStatus] = await Promise.all([status(valid.key), status(unknown)]);
      seen.valid.set(validStatus, (seen.valid.get(validStatus) ?? 0) + 1);
      seen.unknown.set(unknownStatus, (seen.unknown.get(unknownStatus) ?? 0) + 1);
      if (validStatus !== 200) {
        firstFailure ??= Date.now();
        lastFailure = Date.now();
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();

  const killedAt = Date.now();
  let afterFailover: Response;
  try {
    await sentinels.killPrimary();
    // Sentinel's own pace: a failover whose elected leader has to abort is tried again after twice the
    // failover timeout (10 s here), so the deadline leaves room for a second attempt.
    await waitFor(async () => (await sentinels.currentPrimaryPort()) === sentinels.replicaPort, 40_000, 100);
    // After the failover: a key created on the new primary authenticates, and rate limits count again.
    let fresh: Awaited<ReturnType<KeyAdmin['create']>> | undefined;
    await waitFor(
      async () => {
        fresh = await admin.create({ consumer: 'after-failover', environments: ['production'] }).catch(() => undefined);
        return fresh !== undefined;
      },
      15_000,
      100,
    );
    await waitFor(async () => (await status(fresh!.key)) === 200, 15_000, 50);
    afterFailover = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${limited.key}` } });
  } finally {
    flowing = false;
    await traffic;
  }
  expect(afterFailover.status).toBe(200);
  expect(afterFailover.headers.get('ratelimit')).toMatch(/^"listPets"; r=\d+; t=\d+$/);

  // Never a pass for an unknown key; a valid key was answered 200 or, while Redis was switching, 503.
  expect(seen.unknown.get(200)).toBeUndefined();
  for (const code of seen.valid.keys()) expect([200, 503]).toContain(code);
  for (const code of seen.unknown.keys()) expect([401, 503]).toContain(code);
  const failedMs = firstFailure === undefined ? 0 : lastFailure! - firstFailure;
  console.info(
    `sentinel failover: valid-key answers ${JSON.stringify(Object.fromEntries(seen.valid))}, unknown-key answers ${JSON.stringify(Object.fromEntries(seen.unknown))}; ` +
      `requests failed (503) for ${failedMs} ms, starting ${firstFailure === undefined ? '-' : firstFailure - killedAt} ms after the kill`,
  );
}, 100_000);
