// Creates the ioredis clients the gateway and the CLI use, with bounded timeouts so a stuck Redis cannot hang a request.
import { Cluster, Redis, type RedisOptions as IoRedisOptions } from 'ioredis';

/** Without `replyMapping`, which ioredis's constructors type more narrowly than RedisOptions (exactOptionalPropertyTypes). */
type RedisOptions = Omit<IoRedisOptions, 'replyMapping'>;
import type { Logger } from 'pino';

export interface RedisNode {
  host: string;
  port: number;
}

export interface RedisSettings {
  /** Standalone: redis://[:password@]host:port/db or rediss:// for TLS. */
  url: string;
  /** Sentinel: the sentinels to ask for the primary named `sentinelName`. */
  sentinels: readonly RedisNode[];
  sentinelName: string;
  /** Cluster: some of its nodes; the rest are discovered. */
  clusterNodes: readonly RedisNode[];
  /** Password of the data nodes in Sentinel and Cluster mode (standalone takes it from the URL). */
  password: string | null;
  commandTimeoutMs: number;
  connectTimeoutMs: number;
}

/** A standalone or Sentinel-managed connection, or a cluster: the commands the gateway uses exist on both. */
export type RedisClient = Redis | Cluster;

export function redisTopology(settings: RedisSettings): 'standalone' | 'sentinel' | 'cluster' {
  if (settings.clusterNodes.length > 0) return 'cluster';
  if (settings.sentinels.length > 0) return 'sentinel';
  return 'standalone';
}

/**
 * - `request-path`: commands fail at once while disconnected, so a request gets 503 instead of waiting;
 * - `subscriber`: commands wait for the connection, however long (the key-events subscription);
 * - `tool`: commands wait for one connection attempt, then fail (the operators' CLI).
 */
export type RedisClientRole = 'request-path' | 'subscriber' | 'tool';

export interface RedisClientOptions {
  role: RedisClientRole;
  logger?: Logger;
  /** Names the connection in logs and in Redis (CLIENT LIST). */
  name: string;
  /** Logs nothing until first ready: another connection to the same Redis says it cannot be reached. */
  quietUntilReady?: boolean;
}

/** The setting that says where Redis is, with its value (never its password): what an operator fixes when Redis cannot be reached. */
export function describeRedisSetting(settings: RedisSettings): string {
  const nodes = (list: readonly RedisNode[]) => list.map(({ host, port }) => `${host}:${port}`).join(',');
  switch (redisTopology(settings)) {
    case 'cluster':
      return `REDIS_CLUSTER_NODES (redis.clusterNodes) ${nodes(settings.clusterNodes)}`;
    case 'sentinel':
      return `REDIS_SENTINELS (redis.sentinels) ${nodes(settings.sentinels)}, primary REDIS_SENTINEL_NAME ${settings.sentinelName}`;
    default:
      return `REDIS_URL (redis.url) ${redactRedisUrl(settings.url)}`;
  }
}

/** A Redis URL with its password and every query value masked: ioredis takes any option from the query (`?password=`...). */
export function redactRedisUrl(href: string): string {
  const url = new URL(href);
  if (url.password !== '') url.password = '***';
  for (const name of new Set(url.searchParams.keys())) url.searchParams.set(name, '***');
  // URLSearchParams writes `*` as is: the masked query reads as written.
  return url.href;
}

export function createRedisClient(settings: RedisSettings, options: RedisClientOptions): RedisClient {
  const redisOptions: RedisOptions = {
    connectionName: options.name,
    commandTimeout: settings.commandTimeoutMs,
    connectTimeout: settings.connectTimeoutMs,
    maxRetriesPerRequest: { 'request-path': 0, subscriber: null, tool: 0 }[options.role],
    enableOfflineQueue: options.role !== 'request-path',
    // Channels (the subscriber role's alone) are subscribed again by their followers (subscription.ts): ioredis's own
    // re-subscription leaves its promise unhandled, and a close during it was an unhandled rejection.
    autoResubscribe: false,
    // Reconnect forever, backing off to one attempt every two seconds; a tool gives up at once.
    retryStrategy: (attempt) => (options.role === 'tool' ? null : Math.min(50 * 2 ** attempt, 2000)),
    lazyConnect: false,
    // No auto-pipelining: while one auto-pipeline waits for its replies, ioredis holds every later command back,
    // and under load the requests waiting behind it hold memory up. The exact rate-limit store batches its own.
    enableAutoPipelining: false,
  };
  const password = settings.password ?? undefined;
  let client: RedisClient;
  switch (redisTopology(settings)) {
    case 'cluster':
      client = new Cluster([...settings.clusterNodes], {
        redisOptions: { ...redisOptions, password },
        enableOfflineQueue: redisOptions.enableOfflineQueue,
        clusterRetryStrategy: redisOptions.retryStrategy,
      });
      break;
    case 'sentinel':
      client = new Redis({ ...redisOptions, sentinels: [...settings.sentinels], name: settings.sentinelName, password, sentinelPassword: password });
      break;
    default:
      client = new Redis(settings.url, redisOptions);
  }
  let lastError: string | undefined;
  let everReady = false;
  client.on('error', (error: Error) => {
    // Reconnect attempts raise the same error over and over: log each kind once per outage.
    if (error.message === lastError) return;
    lastError = error.message;
    if (everReady) {
      // The message, not the error: a connection error's stack is the client library's, never the cause.
      options.logger?.warn({ redis: options.name, reason: error.message }, `redis connection error: ${error.message}`);
    } else if (options.quietUntilReady !== true) {
      options.logger?.warn(
        { redis: options.name, reason: error.message },
        `Redis cannot be reached at ${describeRedisSetting(settings)}: ${error.message}; the gateway is not ready until it can, and keeps trying`,
      );
    }
  });
  client.on('ready', () => {
    if (lastError !== undefined && (everReady || options.quietUntilReady !== true)) options.logger?.info({ redis: options.name }, 'redis connection restored');
    everReady = true;
    lastError = undefined;
  });
  return client;
}

/** PING with its own deadline: for readiness, which must answer even when Redis does not. */
export async function pingRedis(client: RedisClient, timeoutMs = 1000): Promise<boolean> {
  if (client.status !== 'ready') return false;
  const timeout = new Promise<boolean>((resolve) => setTimeout(resolve, timeoutMs, false).unref());
  return Promise.race([
    client.ping().then(
      (reply) => reply === 'PONG',
      () => false,
    ),
    timeout,
  ]);
}
