// A fixed-window counter in Redis shared by every gateway replica, as an express-rate-limit Store.
import type { ClientRateLimitInfo, Options, Store } from 'express-rate-limit';
import { timed, type RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import type { Clock } from '../time/clock.ts';
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

type RedisWithIncrement = RedisClient & { rateLimitIncrement(key: string, windowMs: string, hits: string): Promise<[number, number]> };

export interface RedisRateLimitStoreOptions {
  prefix: string;
  clock: Clock;
  /** Told how each batch's command went (the Redis command metrics): one per key per event-loop turn, not one per request. */
  observe?: RedisCommandObserver;
}

/** A request waiting for its count. */
interface Waiting {
  resolve: (info: ClientRateLimitInfo) => void;
  reject: (error: unknown) => void;
}

/**
 * Exact across replicas: every hit is added in Redis before its request goes on. A key's hits in one event-loop turn
 * go as one INCRBY n, the i-th request seeing total − n + i as n INCRs would have told it; each turn's commands are
 * sent at once, never held behind an earlier turn's replies.
 */
export class RedisRateLimitStore implements Store, CountsInRedis {
  readonly prefix: string;
  readonly localKeys = false;
  readonly countsInRedis = true;
  readonly #redis: RedisWithIncrement;
  readonly #clock: Clock;
  readonly #observe: RedisCommandObserver | undefined;
  #windowMs = 60_000;
  /** This turn's requests by Redis key, in arrival order; sent when the turn's I/O callbacks are done (setImmediate). */
  #pending = new Map<string, Waiting[]>();

  constructor(redis: RedisClient, options: RedisRateLimitStoreOptions) {
    if (!('rateLimitIncrement' in redis)) redis.defineCommand('rateLimitIncrement', { numberOfKeys: 1, lua: INCREMENT });
    this.#redis = redis as RedisWithIncrement;
    this.prefix = options.prefix;
    this.#clock = options.clock;
    this.#observe = options.observe;
  }

  init(options: Options): void {
    this.#windowMs = options.windowMs;
  }

  increment(key: string): Promise<ClientRateLimitInfo> {
    if (this.#pending.size === 0) setImmediate(this.#send);
    const redisKey = this.prefix + key;
    const waiting = this.#pending.get(redisKey) ?? [];
    if (waiting.length === 0) this.#pending.set(redisKey, waiting);
    return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  }

  readonly #send = (): void => {
    const batch = this.#pending;
    this.#pending = new Map();
    const windowMs = String(this.#windowMs);
    for (const [redisKey, waiting] of batch) {
      timed(this.#observe, () => this.#redis.rateLimitIncrement(redisKey, windowMs, String(waiting.length)))
        .then(([total, ttlMs]) => {
          const resetTime = new Date(this.#clock.now() + ttlMs);
          const first = total - waiting.length;
          for (const [index, request] of waiting.entries()) request.resolve({ totalHits: first + index + 1, resetTime });
        })
        // Every request of the batch is told the store could not count it (none left waiting); the limiter's policy decides.
        .catch((cause: unknown) => {
          const failure = new RateLimitStoreUnavailableError('Redis could not count the rate-limit hits', { cause });
          for (const request of waiting) request.reject(failure);
        });
    }
  };

  async decrement(key: string): Promise<void> {
    await this.#redis.decr(this.prefix + key);
  }

  async resetKey(key: string): Promise<void> {
    await this.#redis.del(this.prefix + key);
  }
}
