// The operators' CLIs' Redis connection: one attempt, checked with PING, failing with a message that names where it looked.
import { createRedisClient, redactRedisUrl, redisTopology, type RedisClient, type RedisSettings } from '../redis/connect.ts';

/** Redis did not answer: a runtime error (exit 1), its message naming the address without credentials. */
export class RedisUnreachableError extends Error {
  override name = 'RedisUnreachableError';
}

/** Where the CLI looked for Redis, without credentials. */
function describeRedis(settings: RedisSettings): string {
  const nodes = (list: RedisSettings['sentinels']) => list.map(({ host, port }) => `${host}:${port}`).join(',');
  switch (redisTopology(settings)) {
    case 'sentinel':
      return `sentinels ${nodes(settings.sentinels)} (primary ${settings.sentinelName})`;
    case 'cluster':
      return `cluster ${nodes(settings.clusterNodes)}`;
    default:
      return redactRedisUrl(settings.url);
  }
}

/** Runs `work` with a connected client and closes it afterwards. */
export async function withToolRedis<T>(settings: RedisSettings, name: string, work: (redis: RedisClient) => Promise<T>): Promise<T> {
  const redis = createRedisClient(settings, { role: 'tool', name });
  redis.on('error', () => {
    /* reported below, once, as the command's failure */
  });
  try {
    await redis.ping();
  } catch (cause) {
    redis.disconnect();
    throw new RedisUnreachableError(
      `Redis at ${describeRedis(settings)} is unreachable (${(cause as Error).message}); check the Redis settings (REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES)`,
    );
  }
  try {
    return await work(redis);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}
