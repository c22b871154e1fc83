// What the gateway keeps in Redis, wired together: keys (store, cache, events), rate-limit counters, brownouts, deprecated calls.
import { type ClockSkewProbe, createClockSkewProbe } from '../redis/clock-skew.ts';
import type { Logger } from 'pino';
import type { ReadinessCheck } from '../admin/admin-app.ts';
import { CachedKeyStore, type KeyCacheOptions } from '../auth/cached-key-store.ts';
import { followKeyEvents, type KeyEventsOptions } from '../auth/key-events.ts';
import { watchKeyStore } from '../auth/key-store-watch.ts';
import { watchPepper } from '../auth/pepper-watch.ts';
import { RedisKeyStore } from '../auth/redis-key-store.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { Clock } from '../time/clock.ts';
import { RedisDeprecatedCallStore } from '../observability/redis-deprecated-call-store.ts';
import { RedisUsageStore } from '../observability/redis-usage-store.ts';
import { followBrownouts, type BrownoutFollower } from '../policy/brownout-events.ts';
import type { BrownoutBoard } from '../policy/brownouts.ts';
import { LocalFirstRateLimitStore } from '../limits/local-first-rate-limit-store.ts';
import { RedisRateLimitStore } from '../limits/redis-rate-limit-store.ts';
import { reportStoreFailures } from '../limits/rate-limit-store-failure.ts';
import type { RedisCommandKind, RedisCommandObserver } from '../redis/command-timing.ts';
import { createRedisClient, pingRedis, type RedisClient } from '../redis/connect.ts';

/** Operator brownouts are announced at once; they are also read again this often, in case an announcement was lost. */
const BROWNOUT_RESYNC_MS = 5000;

/** The key-events epoch is read this often: a key change whose announcement a replica lost reaches it within this. */
const KEY_EVENTS_CHECK_MS = 1000;

/** The key count is read this often: an emptied key store is logged and counted within it. */
const KEY_STORE_CHECK_MS = 5000;

/** An unverified pepper (Redis away, or a mismatch being fixed) is checked again this often. */
const PEPPER_RETRY_MS = 2000;
/** A verified pepper is checked again this often: a fingerprint changed in Redis is reported within it. */
const PEPPER_RECHECK_MS = 60_000;

export interface RedisStores {
  keyStore: CachedKeyStore;
  rateLimitStore: RedisRateLimitStore | LocalFirstRateLimitStore;
  /** Where every replica's deprecated-call counts add up (the deprecation report). */
  deprecatedCalls: RedisDeprecatedCallStore;
  /** Where every replica's usage counts add up (GET /admin/usage, npm run keys -- usage). */
  usage: RedisUsageStore;
  /** Keeps the board's operator brownouts up to date; absent when no board was given, or until Redis first answers. */
  readonly brownouts: BrownoutFollower | undefined;
  /**
   * Redis answers PING: reported, not critical. Every replica shares this Redis, so failing readiness on it would empty the load
   * balancer and turn cached keys' 200s and the others' 503s into connection errors (docs/operations.md, "Health and shutdown").
   */
  readiness: ReadinessCheck;
  /** Critical: this replica's pepper was verified against the keys' (a property of the replica, not of Redis's health). */
  pepper: ReadinessCheck;
  /** This replica's clock against Redis's, read at scrape time (`redis_clock_skew_seconds`). */
  clockSkew: ClockSkewProbe;
  /** The request-path connection, for what operators change through the admin API (keys, brownouts). */
  client: RedisClient;
  /** True while the request-path connection is up. */
  isRedisAvailable(): boolean;
  /** Sends the last local rate-limit counts (local-first mode), then closes the connections. */
  close(): Promise<void>;
}

export function createRedisStores(
  config: GatewayConfig,
  options: {
    logger: Logger;
    clock: Clock;
    /** The process's brownouts, to follow operators' starts and stops on. */
    brownouts?: BrownoutBoard;
    onLookup?: KeyCacheOptions['onLookup'];
    /** Told each time the whole key cache is dropped, and why. */
    onKeyCacheCleared?: KeyEventsOptions['onCacheCleared'];
    /** Told of every failed local-first synchronisation (the exact mode's failures meet a request, reported by the rate limiter). */
    onRateLimitStoreError?: () => void;
    /** The gateway's pepper fingerprint (`PepperedKeyHasher.pepperFingerprint`), verified against the keys'. */
    pepperFingerprint: string;
    /** Told at every check whether Redis's fingerprint matches (the pepper gauge). */
    onPepperChecked?: (matches: boolean) => void;
    /** Told the key count at every check, and each emptying seen (the key store metrics). */
    onKeyStoreChecked?: (keys: number) => void;
    onKeyStoreEmptied?: () => void;
    /** The observer of each kind of command the stores send (the Redis command metrics). */
    redisCommand?: (kind: RedisCommandKind) => RedisCommandObserver;
  },
): RedisStores {
  const { logger, clock } = options;
  const redis = createRedisClient(config.redis, { role: 'request-path', name: 'petstore-gateway', logger });
  // The request-path connection says when Redis cannot be reached at start: the same Redis, said once.
  const subscriber = createRedisClient(config.redis, { role: 'subscriber', name: 'petstore-gateway-events', logger, quietUntilReady: true });
  const observe = (kind: RedisCommandKind) => (options.redisCommand ? { observe: options.redisCommand(kind) } : {});
  const keyStore = new CachedKeyStore(new RedisKeyStore(redis, config.redis.keyPrefix, options.redisCommand?.('key_lookup')), {
    ...config.auth.cache,
    clock,
    ...(options.onLookup ? { onLookup: options.onLookup } : {}),
  });
  const rateLimitStore =
    config.rateLimit.mode === 'local-first'
      ? new LocalFirstRateLimitStore(redis, {
          prefix: `${config.redis.keyPrefix}rate:`,
          quotaPrefix: `${config.redis.keyPrefix}quota:`,
          clock,
          syncMs: config.rateLimit.syncMs,
          ...observe('rate_limit_increment'),
          onError: reportStoreFailures({
            logger,
            clock,
            ...(options.onRateLimitStoreError ? { count: options.onRateLimitStoreError } : {}),
            mode: 'local-first',
            policy: config.rateLimit.onStoreError,
          }),
        })
      : new RedisRateLimitStore(redis, {
          prefix: `${config.redis.keyPrefix}rate:`,
          quotaPrefix: `${config.redis.keyPrefix}quota:`,
          clock,
          ...observe('rate_limit_increment'),
        });
  // Started once Redis first answers: until then createRedisClient's one line says why, not each follower's failures.
  let followers:
    | {
        keyEvents: ReturnType<typeof followKeyEvents>;
        pepper: ReturnType<typeof watchPepper>;
        keyStore: ReturnType<typeof watchKeyStore>;
        brownouts?: BrownoutFollower;
      }
    | undefined;
  const startFollowers = () => {
    followers = {
      keyEvents: followKeyEvents({
        subscriber,
        redis,
        keyPrefix: config.redis.keyPrefix,
        cache: keyStore,
        checkMs: KEY_EVENTS_CHECK_MS,
        logger,
        ...(options.onKeyCacheCleared ? { onCacheCleared: options.onKeyCacheCleared } : {}),
      }),
      // Not awaited: the gateway starts (not ready) while Redis is away, and subscribes when it comes (tried until it holds).
      pepper: watchPepper(redis, {
        keyPrefix: config.redis.keyPrefix,
        fingerprint: options.pepperFingerprint,
        logger,
        retryMs: PEPPER_RETRY_MS,
        recheckMs: PEPPER_RECHECK_MS,
        ...(options.onPepperChecked ? { onChecked: options.onPepperChecked } : {}),
      }),
      // The pepper watch never claims an empty Redis, so an emptied store is not re-claimed by a gateway: this says it was emptied.
      keyStore: watchKeyStore(redis, {
        keyPrefix: config.redis.keyPrefix,
        logger,
        checkMs: KEY_STORE_CHECK_MS,
        ...(options.onKeyStoreChecked ? { onChecked: options.onKeyStoreChecked } : {}),
        ...(options.onKeyStoreEmptied ? { onEmptied: options.onKeyStoreEmptied } : {}),
      }),
      ...(options.brownouts
        ? {
            brownouts: followBrownouts({
              redis,
              subscriber,
              keyPrefix: config.redis.keyPrefix,
              board: options.brownouts,
              resyncMs: BROWNOUT_RESYNC_MS,
              logger,
            }),
          }
        : {}),
    };
  };
  redis.once('ready', startFollowers);
  return {
    keyStore,
    rateLimitStore,
    deprecatedCalls: new RedisDeprecatedCallStore(redis, config.redis.keyPrefix, options.redisCommand?.('report_flush')),
    usage: new RedisUsageStore(redis, {
      keyPrefix: config.redis.keyPrefix,
      clock,
      retentionDays: config.usage.retentionDays,
      ...observe('report_flush'),
    }),
    get brownouts() {
      return followers?.brownouts;
    },
    readiness: { name: 'redis', critical: false, check: () => pingRedis(redis) },
    clockSkew: createClockSkewProbe(redis, clock, logger),
    // Not verified before Redis first answered.
    pepper: { name: 'pepper', critical: true, check: async () => (followers ? followers.pepper.readiness.check() : false) },
    client: redis,
    isRedisAvailable: () => redis.status === 'ready',
    async close() {
      redis.off('ready', startFollowers);
      followers?.keyEvents.close();
      followers?.brownouts?.close();
      followers?.pepper.close();
      followers?.keyStore.close();
      if (rateLimitStore instanceof LocalFirstRateLimitStore) await rateLimitStore.close();
      redis.disconnect();
      subscriber.disconnect();
    },
  };
}
