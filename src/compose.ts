// Wires a gateway from its configuration and the parts that differ between production and the demo.
import { connect } from 'node:net';
import type { Logger } from 'pino';
import packageJson from '../package.json' with { type: 'json' };
import type { ReadinessCheck } from './admin/admin-app.ts';
import { createApp } from './app.ts';
import type { KeyHasher } from './auth/key-hash.ts';
import type { Store as RateLimitStore } from 'express-rate-limit';
import type { KeyStore } from './auth/key-store.ts';
import type { GatewayConfig } from './config/schema.ts';
import { loadContract } from './contract/compile-contract.ts';
import type { Clock } from './http/clock.ts';
import { createMetrics, type GatewayMetrics } from './observability/metrics.ts';
import { createProxy } from './proxy/create-proxy.ts';
import { describeUpstreamFailure } from './proxy/upstream-failure.ts';
import { createRedisStores, type RedisStores } from './redis/redis-stores.ts';
import { startGateway, type RunningGateway } from './server.ts';

/** The stores behind the pipeline; built once the metrics exist, so they can report into them. */
export interface Stores {
  keyStore: KeyStore;
  /** Shared rate-limit counters; absent, each process counts alone (the demo). */
  rateLimitStore?: RateLimitStore;
  /** Readiness checks of the stores' dependencies (Redis). */
  checks: readonly ReadinessCheck[];
  close?: () => Promise<void> | void;
}

export interface ComposeOptions {
  config: GatewayConfig;
  logger: Logger;
  clock: Clock;
  hashKey: KeyHasher;
  stores: (metrics: GatewayMetrics) => Stores;
  onClosed?: () => Promise<void> | void;
}

/** Whether a TCP connection to the upstream opens: reported by /readyz and metrics, not critical (see README). */
export function upstreamReachable(baseUrl: string, timeoutMs = 1000): Promise<boolean> {
  const url = new URL(baseUrl);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname, port, timeout: timeoutMs });
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => finish(true));
    socket.once('timeout', () => finish(false));
    socket.once('error', () => finish(false));
  });
}

export async function composeGateway(options: ComposeOptions): Promise<RunningGateway & { metrics: GatewayMetrics }> {
  const { config, logger } = options;
  const contract = loadContract(config.contractPath);
  const upstreamCheck: ReadinessCheck = { name: 'upstream', critical: false, check: () => upstreamReachable(config.upstreamBaseUrl) };
  let stores: Stores | undefined;
  const metrics = createMetrics({
    environment: config.environment,
    version: packageJson.version,
    operations: contract.operations.map((operation) => operation.id),
    sunsets: contract.operations.flatMap((operation) =>
      operation.deprecation?.sunset ? [{ operation: operation.id, sunset: operation.deprecation.sunset }] : [],
    ),
    dependencies: () => [upstreamCheck, ...(stores?.checks ?? [])],
  });
  stores = options.stores(metrics);
  const { keyStore, rateLimitStore, checks } = stores;
  const proxy = createProxy({
    baseUrl: config.upstreamBaseUrl,
    idleTimeoutMs: config.upstream.timeoutMs,
    connectTimeoutMs: config.upstream.connectTimeoutMs,
    totalTimeoutMs: config.upstream.totalTimeoutMs,
    maxSockets: config.upstream.maxSockets,
    maxFreeSockets: config.upstream.maxFreeSockets,
    circuitBreaker: { ...config.upstream.circuitBreaker, onStateChange: metrics.upstreamCircuit },
    onFailure: (kind, operation, error) => {
      metrics.upstreamFailed(operation, kind);
      // A decided refusal, not a bug: no stack, and never the raw bytes a parser error carries.
      logger.warn({ operation, upstreamFailure: describeUpstreamFailure(error) }, 'upstream exchange failed');
    },
  });
  const app = createApp({
    config,
    contract,
    keyStore,
    ...(rateLimitStore ? { rateLimitStore } : {}),
    hashKey: options.hashKey,
    clock: options.clock,
    logger,
    proxy,
    metrics,
  });
  const running = await startGateway({
    app,
    config,
    logger,
    admin: {
      checks: [...checks, upstreamCheck],
      metrics: { contentType: metrics.registry.contentType, render: () => metrics.registry.metrics() },
    },
    onClosed: async () => {
      proxy.close();
      await stores?.close?.();
      await options.onClosed?.();
    },
  });
  return { ...running, metrics };
}

/** The production wiring: keys and rate-limit counters in Redis, reporting into the metrics. */
export async function composeRedisGateway(
  options: Omit<ComposeOptions, 'stores'>,
): Promise<RunningGateway & { metrics: GatewayMetrics; redis: RedisStores }> {
  const { config, logger, clock } = options;
  let redis: RedisStores | undefined;
  const running = await composeGateway({
    ...options,
    stores: (metrics) => {
      redis = createRedisStores(config, {
        logger,
        clock,
        onLookup: metrics.keyCacheLookup,
        onRateLimitStoreError: metrics.rateLimitStoreError,
      });
      return { keyStore: redis.keyStore, rateLimitStore: redis.rateLimitStore, checks: [redis.readiness], close: redis.close };
    },
  });
  if (!redis) throw new Error('composeGateway did not build the stores');
  return { ...running, redis };
}
