// The rate-limit stores' set-up: one private Redis, and the request-path connections the replicas' stores hold to it.
import type { RedisClient } from '../../src/redis/connect.ts';
import { requestPathClient, startRedis, type PrivateRedis } from '../../support/start-redis.ts';

export interface StoreRedis {
  redis: PrivateRedis;
  /** A connection as one replica's store holds it (ready: the request path never queues a command), to `url`. */
  connect(name: string, url?: string): Promise<RedisClient>;
  /** Empties Redis and resets its command statistics, so that each test counts its own commands. */
  empty(): Promise<void>;
  /** Closes every connection made with `connect`, then stops Redis. */
  stop(): Promise<void>;
}

export async function startStoreRedis(): Promise<StoreRedis> {
  const redis = await startRedis();
  const clients: RedisClient[] = [];
  return {
    redis,
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
    },
  };
}
