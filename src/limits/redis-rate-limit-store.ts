// A fixed-window counter in Redis shared by every gateway replica, as an express-rate-limit Store.
import type { ClientRateLimitInfo, Options, Store } from 'express-rate-limit';
import { timed, type RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import type { Clock } from '../time/clock.ts';
import { QuotaDesk, windowEndWithQuota, type CountsQuotas } from './limiter-channel.ts';
import { quotaCounterKey, quotaCounters, readingAt, type QuotaCounter, type QuotaSpec } from './quota-count.ts';
import type { CountsInRedis } from './rate-limit.ts';
import { RateLimitStoreUnavailableError } from './rate-limit-store-failure.ts';

/**
 * One round trip: add the hits, starting the window on the first. ioredis falls back from EVALSHA to EVAL on NOSCRIPT,
 * so a restarted Redis needs no reload. (rate-limit-redis loads its scripts once at start-up, broken if Redis was
 * down then, and replays a timed-out EVALSHA, counting twice: hence this small store.)
 */
const INCREMENT = `
local hits = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {hits, ttl}
`;

/**
 * The same, and the key's quota counters (KEYS[1 + q], its limit ARGV[2 + 2q], its expiry ARGV[3 + 2q]) in the same
 * round trip: the batch's requests within the window's limit (ARGV[3]) take quota, in order, while every quota has
 * room; the others take none. Answers the window's total and expiry, how many were admitted, and each quota's use
 * before the batch: the gateway then tells each request what it got (src/limits/quota-count.ts, the same arithmetic).
 */
const INCREMENT_WITH_QUOTAS = `
local batch = tonumber(ARGV[2])
local hits = redis.call('INCRBY', KEYS[1], batch)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
local admitted = math.min(batch, math.max(0, tonumber(ARGV[3]) - (hits - batch)))
local used = {}
for i = 2, #KEYS do
  used[i - 1] = tonumber(redis.call('GET', KEYS[i]) or '0')
  admitted = math.min(admitted, math.max(0, tonumber(ARGV[2 + 2 * (i - 1)]) - used[i - 1]))
end
if admitted > 0 then
  for i = 2, #KEYS do
    redis.call('INCRBY', KEYS[i], admitted)
    redis.call('PEXPIRE', KEYS[i], ARGV[3 + 2 * (i - 1)])
  end
end
return {hits, ttl, admitted, unpack(used)}
`;

/** A quota counter outlives its period by this much, for a replica whose clock lags (its name holds the period, so nothing is counted twice). */
export const QUOTA_COUNTER_GRACE_MS = 86_400_000;

type RedisWithIncrement = RedisClient & {
  rateLimitIncrement(key: string, windowMs: string, hits: string): Promise<[number, number]>;
  rateLimitIncrementWithQuotas(...keysThenArguments: string[]): Promise<number[]>;
};

export interface RedisRateLimitStoreOptions {
  prefix: string;
  /** Of the quota counters (src/limits/quota-count.ts names them), kept apart from the window counters; `prefix` + `quota:` when absent. */
  quotaPrefix?: string;
  clock: Clock;
  /** Told how each batch's command went (the Redis command metrics): one per key per event-loop turn, not one per request. */
  observe?: RedisCommandObserver;
}

/** A request waiting for its count. */
interface Waiting {
  resolve: (info: ClientRateLimitInfo) => void;
  reject: (error: unknown) => void;
}

/** One counter key's requests of this turn, and the quota spec they count with (the latest the stage left). */
interface Batch {
  waiting: Waiting[];
  spec: QuotaSpec | undefined;
}

/**
 * Exact across replicas: every hit is added in Redis before its request goes on. A key's hits in one event-loop turn
 * go as one INCRBY n, the i-th request seeing total − n + i as n INCRs would have told it; each turn's commands are
 * sent at once, never held behind an earlier turn's replies.
 */
export class RedisRateLimitStore implements Store, CountsInRedis, CountsQuotas {
  readonly prefix: string;
  readonly localKeys = false;
  readonly countsInRedis = true;
  readonly quotas = new QuotaDesk();
  readonly #quotaPrefix: string;
  readonly #redis: RedisWithIncrement;
  readonly #clock: Clock;
  readonly #observe: RedisCommandObserver | undefined;
  #windowMs = 60_000;
  /** This turn's requests by Redis key, in arrival order; sent when the turn's I/O callbacks are done (setImmediate). */
  #pending = new Map<string, Batch>();

  constructor(redis: RedisClient, options: RedisRateLimitStoreOptions) {
    if (!('rateLimitIncrement' in redis)) redis.defineCommand('rateLimitIncrement', { numberOfKeys: 1, lua: INCREMENT });
    // The number of keys varies (a day quota, a month quota, or both): given with each call.
    if (!('rateLimitIncrementWithQuotas' in redis)) redis.defineCommand('rateLimitIncrementWithQuotas', { lua: INCREMENT_WITH_QUOTAS });
    this.#redis = redis as RedisWithIncrement;
    this.prefix = options.prefix;
    this.#quotaPrefix = options.quotaPrefix ?? `${options.prefix}quota:`;
    this.#clock = options.clock;
    this.#observe = options.observe;
  }

  init(options: Options): void {
    this.#windowMs = options.windowMs;
  }

  increment(key: string): Promise<ClientRateLimitInfo> {
    if (this.#pending.size === 0) setImmediate(this.#send);
    const spec = this.quotas.specFor(key);
    let batch = this.#pending.get(key);
    if (batch === undefined) {
      batch = { waiting: [], spec };
      this.#pending.set(key, batch);
    } else if (spec !== undefined) {
      batch.spec = spec;
    }
    const { waiting } = batch;
    return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  }

  readonly #send = (): void => {
    const batch = this.#pending;
    this.#pending = new Map();
    const windowMs = String(this.#windowMs);
    for (const [key, { waiting, spec }] of batch) {
      const counted = spec === undefined ? this.#countWindow(key, windowMs, waiting) : this.#countWithQuotas(key, windowMs, waiting, spec);
      // Every request of the batch is told the store could not count it (none left waiting); the limiter's policy decides.
      counted.catch((cause: unknown) => {
        const failure = new RateLimitStoreUnavailableError('Redis could not count the rate-limit hits', { cause });
        for (const request of waiting) request.reject(failure);
      });
    }
  };

  /** The window's counter alone: the key has no quota. */
  async #countWindow(key: string, windowMs: string, waiting: readonly Waiting[]): Promise<void> {
    const [total, ttlMs] = await timed(this.#observe, () => this.#redis.rateLimitIncrement(this.prefix + key, windowMs, String(waiting.length)));
    const resetTime = new Date(this.#clock.now() + ttlMs);
    const first = total - waiting.length;
    for (const [index, request] of waiting.entries()) request.resolve({ totalHits: first + index + 1, resetTime });
  }

  /** The window's counter and the key's quota counters in one script; each request gets its own reading with its count. */
  async #countWithQuotas(key: string, windowMs: string, waiting: readonly Waiting[], spec: QuotaSpec): Promise<void> {
    const now = this.#clock.now();
    const counters = quotaCounters(spec, now);
    const keys = [this.#windowKey(key, spec.keyId), ...counters.map((counter) => quotaCounterKey(this.#quotaPrefix, spec.keyId, counter))];
    // Relative expiries, from the gateway's clock: whatever Redis's own clock says, a counter lives past its period.
    const limits = counters.flatMap((counter: QuotaCounter) => [String(counter.limit), String(counter.endsAt - now + QUOTA_COUNTER_GRACE_MS)]);
    const reply = await timed(this.#observe, () =>
      this.#redis.rateLimitIncrementWithQuotas(String(keys.length), ...keys, windowMs, String(waiting.length), String(spec.windowLimit), ...limits),
    );
    const [total, ttlMs, admitted] = reply as [number, number, number];
    const usedBefore = reply.slice(3);
    const windowEndsAt = now + ttlMs;
    const first = total - waiting.length;
    for (const [index, request] of waiting.entries()) {
      const totalHits = first + index + 1;
      const quota = readingAt(index, admitted, totalHits <= spec.windowLimit, counters, usedBefore);
      request.resolve({ totalHits, resetTime: windowEndWithQuota(windowEndsAt, quota) });
    }
  }

  /**
   * The window's counter of a key with quotas, its key id as the hash tag, so that one script may also count the
   * quotas in a Redis Cluster. A key without quotas keeps its plain counter (`prefix + key`); one given a quota
   * starts a new window counter, which may let it pass up to one window's limit again, once.
   */
  #windowKey(key: string, keyId: string): string {
    return `${this.prefix}{${keyId}}${key.slice(keyId.length)}`;
  }

  async decrement(key: string): Promise<void> {
    await this.#redis.decr(this.prefix + key);
  }

  async resetKey(key: string): Promise<void> {
    await this.#redis.del(this.prefix + key);
  }
}
