// Builds the real gateway pipeline for tests: memory key store, fixed clock, silent or captured logs.
import { Writable } from 'node:stream';
import type { Express } from 'express';
import { createApp } from '../../src/app.ts';
import { generateApiKey, generateKeyId } from '../../src/auth/api-key.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import type { KeyRecord, KeyStore } from '../../src/auth/key-store.ts';
import { MemoryKeyStore } from '../../src/auth/memory-key-store.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { Environment, GatewayConfig } from '../../src/config/schema.ts';
import { loadContract } from '../../src/contract/compile-contract.ts';
import { fixedClock } from '../../src/http/clock.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createMetrics, type GatewayMetrics } from '../../src/observability/metrics.ts';
import { createProxy, type Proxy } from '../../src/proxy/create-proxy.ts';

/** 2026-11-21T12:00:00Z: after the deprecation date, well before the sunset. */
export const TEST_NOW = Date.parse('2026-11-21T12:00:00Z');

export interface TestGatewayOptions {
  upstreamUrl: string;
  environment?: Environment;
  env?: Record<string, string>;
  overrides?: Record<string, unknown>;
  keyStore?: KeyStore;
}

export interface TestGateway {
  app: Express;
  config: GatewayConfig;
  clock: ReturnType<typeof fixedClock>;
  keyStore: MemoryKeyStore;
  /** A key valid in the gateway's environment. */
  apiKey: string;
  keyId: string;
  /** Adds a key with the given record fields; returns the key. */
  addKey(fields?: Partial<KeyRecord>): string;
  hashKey: (key: string) => string;
  /** Every log line the gateway wrote, as parsed JSON. */
  logs: Array<Record<string, unknown>>;
  /** Raw log output, for checks that nothing secret was written. */
  rawLogs(): string;
  proxy: Proxy;
  metrics: GatewayMetrics;
  /** The Prometheus exposition, as /metrics serves it. */
  scrape(): Promise<string>;
  close(): void;
}

export function buildTestGateway(options: TestGatewayOptions): TestGateway {
  const environment = options.environment ?? 'production';
  const config = loadConfig(
    { UPSTREAM_URL: options.upstreamUrl, GATEWAY_ENVIRONMENT: environment, ...options.env },
    { shutdown: { drainDelayMs: 0, gracePeriodMs: 2000 }, ...options.overrides },
  );
  const contract = loadContract(config.contractPath);
  const clock = fixedClock(TEST_NOW);
  const hashKey = createKeyHasher('test-pepper');
  const keyStore = new MemoryKeyStore();
  const raw: string[] = [];
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const text = chunk.toString('utf8');
      raw.push(text);
      for (const line of text.split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger('info', sink);
  const metrics = createMetrics({
    environment,
    version: 'test',
    processMetrics: false,
    operations: contract.operations.map((operation) => operation.id),
    sunsets: contract.operations.flatMap((operation) =>
      operation.deprecation?.sunset ? [{ operation: operation.id, sunset: operation.deprecation.sunset }] : [],
    ),
  });
  const proxy = createProxy({
    baseUrl: config.upstreamBaseUrl,
    idleTimeoutMs: config.upstream.timeoutMs,
    connectTimeoutMs: config.upstream.connectTimeoutMs,
    totalTimeoutMs: config.upstream.totalTimeoutMs,
    maxSockets: config.upstream.maxSockets,
    maxFreeSockets: config.upstream.maxFreeSockets,
    circuitBreaker: { ...config.upstream.circuitBreaker, onStateChange: metrics.upstreamCircuit },
    onFailure: (kind, operation) => metrics.upstreamFailed(operation, kind),
  });

  function addKey(fields: Partial<KeyRecord> = {}): string {
    const key = generateApiKey(fields.environments ?? [environment]);
    keyStore.add(hashKey(key), {
      id: generateKeyId(),
      consumer: 'test-consumer',
      environments: [environment],
      createdAt: new Date(TEST_NOW).toISOString(),
      revoked: false,
      ...fields,
    });
    return key;
  }
  const apiKey = addKey({ id: 'key_primary', consumer: 'acme' });
  const app = createApp({
    config,
    contract,
    keyStore: options.keyStore ?? keyStore,
    hashKey,
    clock,
    logger,
    proxy,
    metrics,
  });
  return {
    app,
    config,
    clock,
    keyStore,
    apiKey,
    keyId: 'key_primary',
    addKey,
    hashKey,
    logs,
    rawLogs: () => raw.join(''),
    proxy,
    metrics,
    scrape: () => metrics.registry.metrics(),
    close: () => proxy.close(),
  };
}
