// A fixed-window counter in Redis shared by every gateway replica, as an express-rate-limit Store.
import type { ClientRateLimitInfo, Options, Store } from 'express-rate-limit';
import type { RedisClient } from '../redis/connect.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import type { Clock } from '../time/clock.ts';

/**
 * One round trip: count the hit and start the window on the first one. ioredis sends it as EVALSHA
 * and falls back to EVAL on NOSCRIPT, so a restarted or failed-over Redis needs no reload step.
 * (rate-limit-redis loads its scripts once at start-up and stays broken if Redis was down then, and
 * replays a timed-out EVALSHA, which can count one request twice; hence this small store.)
 */
const INCREMENT = `
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {hits, ttl}
`;

type RedisWithIncrement = RedisClient & { rateLimitIncrement(key: string, windowMs: string): Promise<[number, number]> };

export interface RedisRateLimitStoreOptions {
  prefix: string;
  clock: Clock;
  /** Told of every store failure, whatever the policy then does with it. */
  onError?: (error: unknown) => void;
}

export class RedisRateLimitStore implements Store {
  readonly prefix: string;
  readonly localKeys = false;
  readonly #redis: RedisWithIncrement;
  readonly #clock: Clock;
  readonly #onError: RedisRateLimitStoreOptions['onError'];
  #windowMs = 60_000;

  constructor(redis: RedisClient, options: RedisRateLimitStoreOptions) {
    if (!('rateLimitIncrement' in redis)) redis.defineCommand('rateLimitIncrement', { numberOfKeys: 1, lua: INCREMENT });
    this.#redis = redis as RedisWithIncrement;
    this.prefix = options.prefix;
    this.#clock = options.clock;
    this.#onError = options.onError;
  }

  init(options: Options): void {
    this.#windowMs = options.windowMs;
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    try {
      const [totalHits, ttlMs] = await this.#redis.rateLimitIncrement(this.prefix + key, String(this.#windowMs));
      return { totalHits, resetTime: new Date(this.#clock.now() + ttlMs) };
    } catch (cause) {
      this.#onError?.(cause);
      throw new GatewayError('service_unavailable', 'Rate limits cannot be checked right now; retry shortly', {
        cause,
        headers: { 'Retry-After': '1' },
      });
    }
  }

  async decrement(key: string): Promise<void> {
    await this.#redis.decr(this.prefix + key);
  }

  async resetKey(key: string): Promise<void> {
    await this.#redis.del(this.prefix + key);
  }
}
