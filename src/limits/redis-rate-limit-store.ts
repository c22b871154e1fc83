// Exact counts in Redis shared by every gateway replica: a key's window and quotas in one script call per event-loop
// turn, the quotas' periods taken from Redis's own clock.
import { timed, type RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import type { Clock } from '../time/clock.ts';
import { hasQuota, type LimitPolicy, type LimitReading, type LimitStore } from './limit-store.ts';
import { readingAt, type QuotaCounter } from './quota-count.ts';
import { QUOTA_PERIODS } from './quota-periods.ts';
import { RateLimitStoreUnavailableError } from './rate-limit-store-failure.ts';

/**
 * One round trip: add the hits, starting the window on the first. ioredis falls back from EVALSHA to EVAL on NOSCRIPT,
 * so a restarted Redis needs no reload. (rate-limit-redis loads its scripts once at start-up, broken if Redis was
 * down then, and replays a timed-out EVALSHA, counting twice: hence this small store.) The window is Redis's: it ends
 * when its key expires, and the reply says in how long.
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
 * The same, and the key's quotas in the same round trip, their UTC day and month taken from Redis's TIME (never a
 * replica's clock: replicas whose clocks differ still count one period and agree on its end). KEYS[2] is the quota
 * counters' prefix with the key id's hash tag: the counters are named here (`day:2026-12-31`, `month:2026-12`), in the
 * slot of KEYS[2], so one script also counts them in a Redis Cluster. ARGV: the window's length, the batch, the
 * window's limit, the day's and the month's quota ('' for none), a counter's grace past its period. The batch's
 * requests within the window's limit take quota, in order, while every quota has room; the others take none.
 * Answers the window's total and expiry, how many were admitted, Redis's now (ms), then each quota's use before the
 * batch and its period's end (ms): the gateway tells each request what it got (src/limits/quota-count.ts, the same
 * arithmetic). The calendar is H. Hinnant's civil-from-days, in whole days since the epoch.
 */
const INCREMENT_WITH_QUOTAS = `
local batch = tonumber(ARGV[2])
local hits = redis.call('INCRBY', KEYS[1], batch)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local days = math.floor(now / 86400000)
local z = days + 719468
local era = math.floor(z / 146097)
local doe = z - era * 146097
local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
local mp = math.floor((5 * doy + 2) / 153)
local day = doy - math.floor((153 * mp + 2) / 5) + 1
local month = mp < 10 and mp + 3 or mp - 9
local year = yoe + era * 400 + (month <= 2 and 1 or 0)
local function daysFromCivil(y, m, d)
  if m <= 2 then y = y - 1 end
  local e = math.floor(y / 400)
  local ye = y - e * 400
  local dy = math.floor((153 * ((m + 9) % 12) + 2) / 5) + d - 1
  return e * 146097 + ye * 365 + math.floor(ye / 4) - math.floor(ye / 100) + dy - 719468
end
local quotas = {}
if ARGV[4] ~= '' then
  quotas[#quotas + 1] = {KEYS[2] .. 'day:' .. string.format('%04d-%02d-%02d', year, month, day), tonumber(ARGV[4]), (days + 1) * 86400000}
end
if ARGV[5] ~= '' then
  local nextMonth = month == 12 and daysFromCivil(year + 1, 1, 1) or daysFromCivil(year, month + 1, 1)
  quotas[#quotas + 1] = {KEYS[2] .. 'month:' .. string.format('%04d-%02d', year, month), tonumber(ARGV[5]), nextMonth * 86400000}
end
local admitted = math.min(batch, math.max(0, tonumber(ARGV[3]) - (hits - batch)))
local reply = {hits, ttl, 0, now}
for _, quota in ipairs(quotas) do
  local used = tonumber(redis.call('GET', quota[1]) or '0')
  admitted = math.min(admitted, math.max(0, quota[2] - used))
  reply[#reply + 1] = used
  reply[#reply + 1] = quota[3]
end
if admitted > 0 then
  for _, quota in ipairs(quotas) do
    redis.call('INCRBY', quota[1], admitted)
    redis.call('PEXPIRE', quota[1], quota[3] - now + tonumber(ARGV[6]))
  end
end
reply[3] = admitted
return reply
`;

/** A quota counter outlives its period by this much, for a replica whose clock lags (local-first: its name holds the period, so nothing is counted twice). */
export const QUOTA_COUNTER_GRACE_MS = 86_400_000;

type RedisWithIncrement = RedisClient & {
  rateLimitIncrement(key: string, windowMs: string, hits: string): Promise<[number, number]>;
  rateLimitIncrementWithQuotas(...keysThenArguments: string[]): Promise<number[]>;
};

export interface RedisRateLimitStoreOptions {
  prefix: string;
  /** Of the quota counters (src/limits/quota-count.ts names them), kept apart from the window counters; `prefix` + `quota:` when absent. */
  quotaPrefix?: string;
  /** Only to place Redis's answers (window and period ends, relative to Redis's now) on the gateway's clock. */
  clock: Clock;
  /** Told how each batch's command went (the Redis command metrics): one per key per event-loop turn, not one per request. */
  observe?: RedisCommandObserver;
}

/** A request waiting for its count. */
interface Waiting {
  resolve: (reading: LimitReading) => void;
  reject: (error: unknown) => void;
}

/** One counter key's requests of this turn, and the policy they count with (the latest one asked with). */
interface Batch {
  waiting: Waiting[];
  policy: LimitPolicy;
}

const NO_QUOTA = '';

/**
 * Exact across replicas: every hit is added in Redis before its request goes on. A key's hits in one event-loop turn
 * go as one script call adding n, the i-th request seeing total − n + i as n INCRs would have told it; each turn's
 * commands are sent at once, never held behind an earlier turn's replies.
 */
export class RedisRateLimitStore implements LimitStore {
  readonly prefix: string;
  readonly countsInRedis = true;
  readonly #quotaPrefix: string;
  readonly #redis: RedisWithIncrement;
  readonly #clock: Clock;
  readonly #observe: RedisCommandObserver | undefined;
  /** This turn's requests by counter key, in arrival order; sent when the turn's I/O callbacks are done (setImmediate). */
  #pending = new Map<string, Batch>();

  constructor(redis: RedisClient, options: RedisRateLimitStoreOptions) {
    if (!('rateLimitIncrement' in redis)) redis.defineCommand('rateLimitIncrement', { numberOfKeys: 1, lua: INCREMENT });
    if (!('rateLimitIncrementWithQuotas' in redis)) redis.defineCommand('rateLimitIncrementWithQuotas', { numberOfKeys: 2, lua: INCREMENT_WITH_QUOTAS });
    this.#redis = redis as RedisWithIncrement;
    this.prefix = options.prefix;
    this.#quotaPrefix = options.quotaPrefix ?? `${options.prefix}quota:`;
    this.#clock = options.clock;
    this.#observe = options.observe;
  }

  count(key: string, policy: LimitPolicy): Promise<LimitReading> {
    if (this.#pending.size === 0) setImmediate(this.#send);
    let batch = this.#pending.get(key);
    if (batch === undefined) {
      batch = { waiting: [], policy };
      this.#pending.set(key, batch);
    } else {
      batch.policy = policy;
    }
    const { waiting } = batch;
    return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  }

  readonly #send = (): void => {
    const batch = this.#pending;
    this.#pending = new Map();
    for (const [key, { waiting, policy }] of batch) {
      const counted = hasQuota(policy) ? this.#countWithQuotas(key, waiting, policy) : this.#countWindow(key, waiting, policy);
      // Every request of the batch is told the store could not count it (none left waiting); the limiter's policy decides.
      counted.catch((cause: unknown) => {
        const failure = new RateLimitStoreUnavailableError('Redis could not count the rate-limit hits', { cause });
        for (const request of waiting) request.reject(failure);
      });
    }
  };

  /** The window's counter alone: the key has no quota. */
  async #countWindow(key: string, waiting: readonly Waiting[], policy: LimitPolicy): Promise<void> {
    const [total, ttlMs] = await timed(this.#observe, () => this.#redis.rateLimitIncrement(this.prefix + key, String(policy.windowMs), String(waiting.length)));
    const at = this.#clock.now();
    const windowEndsAt = at + ttlMs;
    const first = total - waiting.length;
    for (const [index, request] of waiting.entries()) request.resolve({ at, hits: first + index + 1, windowEndsAt, quota: undefined });
  }

  /** The window's counter and the key's quota counters in one script; each request gets its own reading with its count. */
  async #countWithQuotas(key: string, waiting: readonly Waiting[], policy: LimitPolicy): Promise<void> {
    const reply = await timed(this.#observe, () =>
      this.#redis.rateLimitIncrementWithQuotas(
        this.#windowKey(key, policy.keyId),
        `${this.#quotaPrefix}{${policy.keyId}}:`,
        String(policy.windowMs),
        String(waiting.length),
        String(policy.perWindow),
        policy.perDay === undefined ? NO_QUOTA : String(policy.perDay),
        policy.perMonth === undefined ? NO_QUOTA : String(policy.perMonth),
        String(QUOTA_COUNTER_GRACE_MS),
      ),
    );
    const [total, ttlMs, admitted, redisNow] = reply as [number, number, number, number];
    const at = this.#clock.now();
    // Redis's period ends, placed on the gateway's clock by their distance from Redis's now: every replica tells the same seconds.
    const counters: Array<Pick<QuotaCounter, 'period' | 'limit' | 'endsAt'>> = [];
    const usedBefore: number[] = [];
    let index = 4;
    for (const period of QUOTA_PERIODS) {
      const limit = period === 'day' ? policy.perDay : policy.perMonth;
      if (limit === undefined) continue;
      usedBefore.push(reply[index]!);
      counters.push({ period, limit, endsAt: at + reply[index + 1]! - redisNow });
      index += 2;
    }
    const windowEndsAt = at + ttlMs;
    const first = total - waiting.length;
    for (const [position, request] of waiting.entries()) {
      const hits = first + position + 1;
      const quota = readingAt(position, admitted, hits <= policy.perWindow, counters, usedBefore);
      request.resolve({ at, hits, windowEndsAt, quota });
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
}
