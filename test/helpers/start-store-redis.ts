// The rate-limit stores' set-up: one private Redis, and the request-path connections the replicas' stores hold to it.
import type { RedisClient } from '../../src/redis/connect.ts';
import { requestPathClient, startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { redisClock } from './redis-clock.ts';

export interface StoreRedis {
  redis: PrivateRedis;
  /** A connection as one replica's store holds it (ready: the request path never queues a command), to `url`. */
  connect(name: string, url?: string): Promise<RedisClient>;
  /** Empties Redis and resets its command statistics, so that each test counts its own commands. */
  empty(): Promise<void>;
  /** Sets Redis's own clock (whole seconds; started with `at`): what the exact limiter's windows and periods follow. */
  setTime(instant: number): void;
  /** Closes every connection made with `connect`, then stops Redis. */
  stop(): Promise<void>;
}

/** `at`: Redis's clock starts there, frozen until `setTime` moves it (redis-clock.ts); the real clock when absent. */
export async function startStoreRedis(options: { at?: number } = {}): Promise<StoreRedis> {
  const clock = options.at === undefined ? undefined : redisClock(options.at);
  let redis: PrivateRedis;
  try {
    redis = await startRedis(clock ? { env: clock.env } : {});
  } catch (error) {
    clock?.remove();
    throw error;
  }
  const clients: RedisClient[] = [];
  return {
    redis,
    setTime(instant) {
      if (clock === undefined) throw new Error('this Redis runs on the real clock: start it with `at`');
      clock.set(instant);
    },
    async connect(name, url = redis.url) {
      const client = await requestPathClient(url, name);
      clients.push(client);
      return client;
    },
    async empty() {
      await redis.client.flushall();
      await redis.client.config('RESETSTAT');
    },
    async stop() {
      for (const client of clients) client.disconnect();
      await redis.stop();
      clock?.remove();
    },
  };
}
