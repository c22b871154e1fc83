// Operator brownouts through Redis, in process: a replica that starts late reads them; Redis away, the last known state holds.
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import type { GatewayConfig } from '../../src/config/schema.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { followBrownouts, publishBrownoutOverride } from '../../src/policy/brownout-events.ts';
import { BrownoutBoard } from '../../src/policy/brownouts.ts';
import { createRedisClient } from '../../src/redis/connect.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const PEPPER = 'brownout-redis-test-pepper-1';
const TEN_MINUTES = 600_000;

let redis: PrivateRedis;
let backend: SampleBackend;
let config: GatewayConfig;
const gateways: RedisGateway[] = [];

beforeAll(async () => {
  redis = await startRedis();
  backend = await startPetStore();
  config = loadConfig(
    { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production' },
    { shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 } },
  );
});
afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.close()));
  await backend.close();
  await redis.stop();
});

async function startGateway(): Promise<{ gateway: RedisGateway; key: string }> {
  const gateway = await startRedisGateway(config, { pepper: PEPPER });
  gateways.push(gateway);
  const { key } = await gateway.admin.create({ consumer: 'acme', environments: ['production'] });
  return { gateway, key };
}

async function getPet(gateway: RedisGateway, key: string): Promise<{ status: number; code?: string }> {
  const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets/1`, { headers: { Authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { code?: string };
  return { status: res.status, ...(res.status === 410 ? { code: body.code } : {}) };
}

const startBrownout = () => {
  const now = Date.now();
  return publishBrownoutOverride(redis.client, config.redis.keyPrefix, 'getPet', { kind: 'started', start: now, end: now + TEN_MINUTES }, now);
};

describe('operator brownouts in Redis', () => {
  it('are applied by a replica that starts after they began', async () => {
    await startBrownout();
    const { gateway, key } = await startGateway();
    await waitFor(async () => (await getPet(gateway, key)).code === 'brownout', 1000, 10);
    expect(await getPet(gateway, key)).toEqual({ status: 410, code: 'brownout' });
  });

  it('are read as soon as the reading connection comes up, when it comes up after the subscription', async () => {
    await startBrownout();
    const board = new BrownoutBoard(new Map([['getPet', []]]));
    const channel = `${config.redis.keyPrefix}brownout-events`;
    // The other tests' gateways listen on the channel too: the follower's subscription is one more.
    const listeners = async () => Number((await redis.client.pubsub('NUMSUB', channel))[1]);
    const others = await listeners();
    const subscriber = createRedisClient(config.redis, { role: 'subscriber', name: 'test-brownout-subscriber' });
    const reader = new Redis(redis.url, { lazyConnect: true });
    // A resync period no test waits out: only the connection's coming up can read the brownout in time.
    const follower = followBrownouts({ redis: reader, subscriber, keyPrefix: config.redis.keyPrefix, board, resyncMs: TEN_MINUTES });
    try {
      await waitFor(async () => (await listeners()) === others + 1, 2000, 10);
      expect(board.override('getPet')).toBeUndefined();
      await reader.connect();
      await waitFor(async () => board.override('getPet')?.kind === 'started', 1000, 10);
    } finally {
      follower.close();
      reader.disconnect();
      subscriber.disconnect();
    }
  });

  it('are heard again once a cut subscription is back: a later announcement applies at once', async () => {
    await publishBrownoutOverride(redis.client, config.redis.keyPrefix, 'getPet', undefined, Date.now());
    const board = new BrownoutBoard(new Map([['getPet', []]]));
    const channel = `${config.redis.keyPrefix}brownout-events`;
    const listeners = async () => Number((await redis.client.pubsub('NUMSUB', channel))[1]);
    const others = await listeners();
    const subscriber = createRedisClient(config.redis, { role: 'subscriber', name: 'test-brownout-subscriber' });
    const reader = createRedisClient(config.redis, { role: 'subscriber', name: 'test-brownout-reader' });
    // A resync period no test waits out: after the cut, only the subscription made again hears the brownout in time.
    const follower = followBrownouts({ redis: reader, subscriber, keyPrefix: config.redis.keyPrefix, board, resyncMs: TEN_MINUTES });
    try {
      await waitFor(async () => (await listeners()) === others + 1, 2000, 10);
      const back = once(subscriber, 'ready');
      subscriber.disconnect(true);
      await back;
      await waitFor(async () => (await listeners()) === others + 1, 2000, 10);
      expect(board.override('getPet')).toBeUndefined();
      await startBrownout();
      await waitFor(async () => board.override('getPet')?.kind === 'started', 1000, 10);
    } finally {
      follower.close();
      reader.disconnect();
      subscriber.disconnect();
    }
  });

  it('hold in their last known state while Redis is unreachable', async () => {
    const { gateway, key } = await startGateway();
    await publishBrownoutOverride(redis.client, config.redis.keyPrefix, 'getPet', undefined, Date.now());
    await waitFor(async () => (await getPet(gateway, key)).status === 200, 1000, 10);
    await startBrownout();
    await waitFor(async () => (await getPet(gateway, key)).code === 'brownout', 1000, 10);
    await redis.kill();
    // A read that fails keeps what the replica knew (the key itself stays cached for auth.cache.ttlMs).
    await gateway.redis.brownouts!.resync();
    expect(await getPet(gateway, key)).toEqual({ status: 410, code: 'brownout' });
  });
});
