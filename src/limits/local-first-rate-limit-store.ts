// Rate-limit counters kept in process and synchronised with Redis in batches, as Kong's `sync_rate` does.
import { timed, type RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import type { Clock } from '../time/clock.ts';
import { hasQuota, type LimitPolicy, type LimitReading, type LimitStore } from './limit-store.ts';
import { QuotaTallies } from './quota-tallies.ts';
import { QUOTA_COUNTER_GRACE_MS } from './redis-rate-limit-store.ts';
import { RateLimitStoreUnavailableError } from './rate-limit-store-failure.ts';

export interface LocalFirstRateLimitStoreOptions {
  prefix: string;
  /** Of the quota counters: the exact store's, so a change of mode keeps the counts; `prefix` + `quota:` when absent. */
  quotaPrefix?: string;
  clock: Clock;
  /** How often local hits are sent to Redis and the replicas' total read back. */
  syncMs: number;
  /**
   * Told of every failed synchronisation (the hits are kept and sent with the next one). No request
   * waits on one, so no request fails with it: this is the only place it is seen.
   */
  onError?: (failure: RateLimitStoreUnavailableError) => void;
  /** Told how each key's synchronisation command went (the Redis command metrics). */
  observe?: RedisCommandObserver;
}

/** Adds a replica's new hits and keeps the key expiring; answers the replicas' total. */
const ADD = `
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return total
`;

type RedisWithAdd = RedisClient & { rateLimitAdd(key: string, hits: string, ttlMs: string): Promise<number> };

interface Counter {
  /** Start of the fixed window the counts belong to (windows are aligned to the clock, the same on every replica). */
  windowStart: number;
  windowMs: number;
  /** The replicas' total for the window as Redis last answered it, this process's synced hits included. */
  synced: number;
  /** Hits counted here and not yet sent. */
  pending: number;
}

/**
 * A request never waits for Redis: `increment` answers from the process's counter plus the last synchronised total.
 * Every `syncMs` every key's pending hits go to Redis in one batch and each answer replaces the known total.
 *
 * Across N replicas a key may pass up to (N − 1) × (its rate per replica) × 2 × syncMs over its limit in a window;
 * with one replica, or after a pause, counts are exact (docs/performance.md, "Scale"). Without Redis every replica
 * counts alone (up to N × the limit). A synchronisation whose reply is lost after Redis applied it is sent again,
 * counting twice: the error is towards refusing early, never letting through. rateLimit.mode `exact` stays available.
 * Quotas are counted the same way, per key and period, and bounded the same: across N replicas a key may pass its
 * quota by up to (N − 1) × its rate at each replica × 2 × syncMs.
 *
 * Windows and periods are the replica's own clock's (the exact store takes them from Redis's): a replica whose clock
 * is off by S counts into the next window or UTC day S early (or late), so around each boundary a key may pass its
 * limit or quota once more, in the other period, for up to S; and the replicas' Retry-After differ by up to S. The
 * skew is exported (petstore_gateway_redis_clock_skew_seconds), alerted on past a second.
 */
export class LocalFirstRateLimitStore implements LimitStore {
  readonly prefix: string;
  readonly countsInRedis = false;
  readonly #quotaTallies: QuotaTallies;
  readonly #redis: RedisWithAdd;
  readonly #clock: Clock;
  readonly #onError: LocalFirstRateLimitStoreOptions['onError'];
  readonly #observe: RedisCommandObserver | undefined;
  readonly #counters = new Map<string, Counter>();
  readonly #timer: NodeJS.Timeout;
  #syncing: Promise<void> | undefined;

  constructor(redis: RedisClient, options: LocalFirstRateLimitStoreOptions) {
    if (!('rateLimitAdd' in redis)) redis.defineCommand('rateLimitAdd', { numberOfKeys: 1, lua: ADD });
    this.#redis = redis as RedisWithAdd;
    this.prefix = options.prefix;
    this.#quotaTallies = new QuotaTallies(options.quotaPrefix ?? `${options.prefix}quota:`);
    this.#clock = options.clock;
    this.#onError = options.onError;
    this.#observe = options.observe;
    this.#timer = setInterval(() => void this.sync(), options.syncMs);
    this.#timer.unref();
  }

  #counterFor(key: string, windowMs: number, now: number): Counter {
    const windowStart = now - (now % windowMs);
    let counter = this.#counters.get(key);
    if (!counter || counter.windowStart !== windowStart || counter.windowMs !== windowMs) {
      counter = { windowStart, windowMs, synced: 0, pending: 0 };
      this.#counters.set(key, counter);
    }
    return counter;
  }

  count(key: string, policy: LimitPolicy): LimitReading {
    const now = this.#clock.now();
    const counter = this.#counterFor(key, policy.windowMs, now);
    counter.pending++;
    const hits = counter.synced + counter.pending;
    const quota = hasQuota(policy) ? this.#quotaTallies.take(policy, hits, now) : undefined;
    return { at: now, hits, windowEndsAt: counter.windowStart + counter.windowMs, quota };
  }

  /** Sends the pending hits and reads the totals back; one at a time. Also called on shutdown. */
  sync(): Promise<void> {
    this.#syncing ??= this.#send().finally(() => {
      this.#syncing = undefined;
    });
    return this.#syncing;
  }

  async #send(): Promise<void> {
    const now = this.#clock.now();
    const batch: Array<[string, Counter, number]> = [];
    for (const [key, counter] of this.#counters) {
      // A past window's counter is done with: its hits (if any are left) no longer decide anything.
      if (counter.windowStart + counter.windowMs <= now) {
        this.#counters.delete(key);
        continue;
      }
      if (counter.pending > 0) batch.push([key, counter, counter.pending]);
    }
    const quotaBatch = this.#quotaTallies.unsent(now, QUOTA_COUNTER_GRACE_MS);
    if (batch.length === 0 && quotaBatch.length === 0) return;
    let failure: unknown;
    // One script per key (INCRBY and PEXPIRE, so no key lacks an expiry), all sent at once (in a cluster, each to its node).
    await Promise.all([
      ...batch.map(async ([key, counter, hits]) => {
        const redisKey = `${this.prefix}${key}:${counter.windowStart}`;
        try {
          // Kept a window past its end for a replica whose clock lags; relative, whatever Redis's own clock says.
          const ttlMs = String(counter.windowStart + 2 * counter.windowMs - now);
          const total = await timed(this.#observe, () => this.#redis.rateLimitAdd(redisKey, String(hits), ttlMs));
          counter.pending = Math.max(0, counter.pending - hits);
          counter.synced = total;
        } catch (error) {
          // The hits stay pending and go with the next synchronisation.
          failure = error;
        }
      }),
      ...quotaBatch.map(async ([redisKey, tally, hits]) => {
        try {
          const ttlMs = String(tally.endsAt - now + QUOTA_COUNTER_GRACE_MS);
          const total = await timed(this.#observe, () => this.#redis.rateLimitAdd(redisKey, String(hits), ttlMs));
          tally.pending = Math.max(0, tally.pending - hits);
          tally.synced = total;
        } catch (error) {
          failure = error;
        }
      }),
    ]);
    // One report per failed synchronisation, however many keys it carried.
    if (failure !== undefined) this.#onError?.(new RateLimitStoreUnavailableError('Redis could not take the rate-limit counts', { cause: failure }));
  }

  /** Stops the timer after a last synchronisation (shutdown): one in flight carries only what it started with. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#syncing;
    await this.sync();
  }
}
