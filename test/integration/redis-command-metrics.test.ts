// The Redis command metrics against a real Redis: each store times its own commands, one per batch, and counts the failed ones.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RedisKeyStore } from '../../src/auth/redis-key-store.ts';
import { createMetrics, type GatewayMetrics } from '../../src/observability/metrics.ts';
import { RedisDeprecatedCallStore } from '../../src/observability/redis-deprecated-call-store.ts';
import { RedisRateLimitStore } from '../../src/limits/redis-rate-limit-store.ts';
import type { RedisCommandKind } from '../../src/redis/command-timing.ts';
import type { RedisClient } from '../../src/redis/connect.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { requestPathClient, startRedis, type PrivateRedis } from '../../support/start-redis.ts';

const NOW = Date.parse('2026-11-22T12:00:00Z');

let redis: PrivateRedis;
let client: RedisClient;
let metrics: GatewayMetrics;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  client?.disconnect();
  await redis.stop();
});
beforeEach(async () => {
  client?.disconnect();
  client = await requestPathClient(redis.url, 'redis-command-metrics-test');
  metrics = createMetrics({ environment: 'production', version: 't', sunsets: [], processMetrics: false });
});

async function timedCommands(command: RedisCommandKind): Promise<{ count: number | undefined; errors: number | undefined }> {
  const series = parseExposition(await metrics.registry.metrics());
  return {
    count: series.get(seriesKey('petstore_gateway_redis_command_duration_seconds_count', { command, environment: 'production' })),
    errors: series.get(seriesKey('petstore_gateway_redis_errors_total', { command, environment: 'production' })),
  };
}

describe('Redis command metrics', () => {
  it('time the exact rate-limit store per command: one per key per turn, however many requests it counts', async () => {
    const store = new RedisRateLimitStore(client, { prefix: 'test:rate:', clock: fixedClock(NOW), observe: metrics.redisCommand('rate_limit_increment') });
    const policy = { keyId: 'key_a', windowMs: 60_000, perWindow: 100 };
    await Promise.all([store.count('a', policy), store.count('a', policy), store.count('a', policy), store.count('b', policy)]);
    expect(await timedCommands('rate_limit_increment')).toEqual({ count: 2, errors: 0 });
  });

  it('time each key lookup', async () => {
    const keys = new RedisKeyStore(client, 'test:', metrics.redisCommand('key_lookup'));
    expect(await keys.findByHash('no-such-hash')).toBeUndefined();
    expect(await timedCommands('key_lookup')).toEqual({ count: 1, errors: 0 });
  });

  it('time each flush of the deprecated-call counts as one script', async () => {
    const calls = new RedisDeprecatedCallStore(client, 'test:', metrics.redisCommand('report_flush'));
    const count = { operation: 'getPet', keyId: 'key_a', consumer: 'acme', calls: 2, firstSeen: NOW, lastSeen: NOW };
    await calls.add([count, { ...count, keyId: 'key_b' }], 'batch-1');
    expect(await timedCommands('report_flush')).toEqual({ count: 1, errors: 0 });
  });

  it('count a command that fails (sent while disconnected) as an error, and time it too', async () => {
    const keys = new RedisKeyStore(client, 'test:', metrics.redisCommand('key_lookup'));
    client.disconnect();
    await expect(keys.findByHash('any')).rejects.toThrow('redis did not answer the key lookup');
    expect(await timedCommands('key_lookup')).toEqual({ count: 1, errors: 1 });
    expect(await timedCommands('rate_limit_increment')).toEqual({ count: 0, errors: 0 });
  });
});
