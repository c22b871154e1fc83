// npm start: the production gateway. Config from config/ and the environment, keys in Redis.
import { CachedKeyStore } from './auth/cached-key-store.ts';
import { followKeyEvents } from './auth/key-events.ts';
import { createKeyHasher } from './auth/key-hash.ts';
import { loadPepper } from './auth/pepper.ts';
import { RedisKeyStore } from './auth/redis-key-store.ts';
import { composeGateway } from './compose.ts';
import { ConfigError, loadConfig } from './config/load-config.ts';
import { systemClock } from './http/clock.ts';
import { createLogger } from './observability/logger.ts';
import { createRedisClient, pingRedis } from './redis/connect.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logging.level);
  const clock = systemClock;
  const hashKey = createKeyHasher(loadPepper(config.auth.pepperFile));
  const redis = createRedisClient(config.redis, { role: 'request-path', name: 'petstore-gateway', logger });
  const subscriber = createRedisClient(config.redis, { role: 'subscriber', name: 'petstore-gateway-events', logger });
  const keyStore = new CachedKeyStore(new RedisKeyStore(redis, config.redis.keyPrefix), { ...config.auth.cache, clock });
  // Not awaited: the gateway starts (not ready) while Redis is away, and subscribes when it comes.
  followKeyEvents(subscriber, config.redis.keyPrefix, keyStore, logger).catch((error: unknown) =>
    logger.error({ err: error }, 'could not subscribe to key events'),
  );

  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception: exiting');
    process.exit(1);
  });

  const gateway = await composeGateway({
    config,
    logger,
    clock,
    keyStore,
    hashKey,
    checks: [{ name: 'redis', critical: true, check: () => pingRedis(redis) }],
    onClosed: () => {
      redis.disconnect();
      subscriber.disconnect();
    },
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      gateway.shutdown(signal).then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
}

main().catch((error: unknown) => {
  const message = error instanceof ConfigError ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`petstore-gateway: could not start: ${message}\n`);
  process.exit(1);
});
