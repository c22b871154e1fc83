// The production key path wired together: Redis store, in-process cache, key events, readiness check.
import type { Logger } from 'pino';
import type { ReadinessCheck } from '../admin/admin-app.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Clock } from '../http/clock.ts';
import { createRedisClient, pingRedis } from '../redis/connect.ts';
import { CachedKeyStore, type KeyCacheOptions } from './cached-key-store.ts';
import { followKeyEvents } from './key-events.ts';
import { RedisKeyStore } from './redis-key-store.ts';

export interface RedisKeys {
  keyStore: CachedKeyStore;
  /** Critical: without Redis, keys outside the cache cannot be checked. */
  readiness: ReadinessCheck;
  /** True while the request-path connection is up. */
  isRedisAvailable(): boolean;
  close(): void;
}

export function createRedisKeys(
  config: GatewayConfig,
  options: { logger: Logger; clock: Clock; onLookup?: KeyCacheOptions['onLookup'] },
): RedisKeys {
  const { logger, clock } = options;
  const redis = createRedisClient(config.redis, { role: 'request-path', name: 'petstore-gateway', logger });
  const subscriber = createRedisClient(config.redis, { role: 'subscriber', name: 'petstore-gateway-events', logger });
  const keyStore = new CachedKeyStore(new RedisKeyStore(redis, config.redis.keyPrefix), {
    ...config.auth.cache,
    clock,
    ...(options.onLookup ? { onLookup: options.onLookup } : {}),
  });
  // Not awaited: the gateway starts (not ready) while Redis is away, and subscribes when it comes.
  followKeyEvents(subscriber, config.redis.keyPrefix, keyStore, logger).catch((error: unknown) =>
    logger.error({ err: error }, 'could not subscribe to key events'),
  );
  return {
    keyStore,
    readiness: { name: 'redis', critical: true, check: () => pingRedis(redis) },
    isRedisAvailable: () => redis.status === 'ready',
    close() {
      redis.disconnect();
      subscriber.disconnect();
    },
  };
}
