// What a gateway's admin API works with: the key and brownout cores on its Redis, and the API over its stores.
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { createAdminApi } from '../admin-api/admin-api.ts';
import { createAdminAuthentication } from '../admin-api/admin-auth.ts';
import type { AdminOperations } from '../admin-api/routes.ts';
import type { AdminTokenSource } from '../admin-api/tokens.ts';
import { KeyAdmin } from '../auth/key-admin.ts';
import type { PepperedKeyHasher } from '../auth/key-hash.ts';
import { ConfigError } from '../config/load-config.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { BrownoutAdmin } from '../policy/brownout-admin.ts';
import type { BrownoutBoard } from '../policy/brownouts.ts';
import type { RedisClient } from '../redis/connect.ts';
import { redisShadowReportReader } from '../shadow/report-store.ts';
import type { Clock } from '../time/clock.ts';

/** What changes keys and brownouts, and reads the shadow report: a store's part of AdminOperations. */
export type StoreAdmin = Pick<AdminOperations, 'keys' | 'brownouts' | 'shadowReport'>;

/** The cores the CLIs use, on the gateway's own connection, with its pepper and its brownouts' schedule as last reloaded. */
export function redisAdmin(
  redis: RedisClient,
  options: { config: GatewayConfig; hashKey: PepperedKeyHasher; brownouts: BrownoutBoard; clock: Clock; logger: Logger },
): StoreAdmin {
  const { config, clock, logger } = options;
  return {
    keys: new KeyAdmin(redis, {
      keyPrefix: config.redis.keyPrefix,
      hashKey: options.hashKey,
      clock,
      onPepperRecorded: (existingKeys) =>
        logger.warn({ existingKeys }, "admin API: recorded this pepper's fingerprint over keys written before fingerprints existed"),
      onPepperMismatch: (message) => logger.warn(`admin API: ${message} (the change does not depend on the pepper, so it was made)`),
      onAnnouncementFailed: (keyId, error) =>
        logger.warn({ err: error, keyId }, 'admin API: a key change was made but not announced; replicas see it by their epoch check within a second'),
    }),
    brownouts: new BrownoutAdmin(redis, { keyPrefix: config.redis.keyPrefix, schedule: () => options.brownouts.schedule, clock }),
    // What every replica's comparisons added up to in Redis; this replica's own are written by its ShadowReport.
    shadowReport: redisShadowReportReader(redis, { keyPrefix: config.redis.keyPrefix, clock, retentionDays: config.shadow.report.retentionDays }),
  };
}

/** A token file where keys are kept in memory (the demo) is a configuration error: there is no API it could turn on. */
export function refuseTokenFileWithoutAdmin(config: GatewayConfig, admin: StoreAdmin | undefined): void {
  if (admin === undefined && config.adminApi.tokenFile !== null) {
    throw new ConfigError('ADMIN_API_TOKEN_FILE (adminApi.tokenFile): the admin API manages keys in Redis, and this gateway keeps its keys in memory');
  }
}

/** The admin API's handler, and the token check that guards the admin listener's other operators' routes. */
export interface GatewayAdminApi {
  api: RequestHandler;
  guard: RequestHandler;
}

/** The admin API over the stores' cores; undefined for stores that have none (keys in memory: the demo). */
export function gatewayAdminApi(
  config: GatewayConfig,
  admin: StoreAdmin | undefined,
  deps: {
    tokens: AdminTokenSource;
    deprecations: AdminOperations['deprecations'];
    usage: AdminOperations['usage'];
    reload: AdminOperations['reload'];
    clock: Clock;
    logger: Logger;
    metrics: GatewayMetrics;
  },
): GatewayAdminApi | undefined {
  if (!admin) {
    refuseTokenFileWithoutAdmin(config, admin);
    return undefined;
  }
  const authentication = createAdminAuthentication({
    tokens: deps.tokens.current,
    maxFailedAuthPerMinute: config.adminApi.maxFailedAuthPerMinute,
    clock: deps.clock,
    logger: deps.logger,
    onAction: deps.metrics.adminAction,
  });
  const api = createAdminApi({
    operations: { ...admin, deprecations: deps.deprecations, usage: deps.usage, defaultEnvironments: () => [config.environment], reload: deps.reload },
    tokens: deps.tokens.current,
    authentication,
    logger: deps.logger,
    onAction: deps.metrics.adminAction,
  });
  return { api, guard: authentication.guard };
}
