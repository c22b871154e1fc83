// The production gateway wiring in process, on a given Redis setup, with a key admin on the same Redis.
import { pino, type Logger } from 'pino';
import { KeyAdmin } from '../../src/auth/key-admin.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import { composeRedisGateway } from '../../src/wiring/compose.ts';
import type { GatewayConfig } from '../../src/config/schema.ts';
import { systemClock, type Clock } from '../../src/time/clock.ts';
import { createRedisClient } from '../../src/redis/connect.ts';
import { waitUntilReady } from '../../support/start-gateway-process.ts';

export type RedisGateway = Awaited<ReturnType<typeof composeRedisGateway>> & {
  admin: KeyAdmin;
  close(): Promise<void>;
};

/** Resolves once /readyz says ready. The admin's client waits out failovers instead of failing at once. */
export async function startRedisGateway(
  config: GatewayConfig,
  options: { pepper: string; clock?: Clock; logger?: Logger; reloadConfig?: () => GatewayConfig },
): Promise<RedisGateway> {
  const clock = options.clock ?? systemClock;
  const hashKey = createKeyHasher(options.pepper);
  const gateway = await composeRedisGateway({
    config,
    logger: options.logger ?? pino({ level: 'silent' }),
    clock,
    hashKey,
    ...(options.reloadConfig ? { reloadConfig: options.reloadConfig } : {}),
  });
  const adminClient = createRedisClient(config.redis, { role: 'subscriber', name: 'test-key-admin' });
  const admin = new KeyAdmin(adminClient, { keyPrefix: config.redis.keyPrefix, hashKey, clock });
  await waitUntilReady(gateway);
  return {
    ...gateway,
    admin,
    async close() {
      adminClient.disconnect();
      await gateway.shutdown('test over');
    },
  };
}
