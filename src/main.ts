// npm start: the production gateway. Config from config/ and the environment, keys in Redis.
import { createKeyHasher } from './auth/key-hash.ts';
import { loadPepper } from './auth/pepper.ts';
import { composeRedisGateway } from './wiring/compose.ts';
import { ConfigError, loadConfig } from './config/load-config.ts';
import { systemClock } from './time/clock.ts';
import { createLogger } from './observability/logger.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logging.level);
  const clock = systemClock;
  const hashKey = createKeyHasher(loadPepper(config.auth.pepperFile));

  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception: exiting');
    process.exit(1);
  });

  const gateway = await composeRedisGateway({ config, logger, clock, hashKey });

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
