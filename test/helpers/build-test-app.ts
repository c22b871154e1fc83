// Builds the real gateway pipeline for tests: memory key store, fixed clock, silent or captured logs.
import { Writable } from 'node:stream';
import type { RequestListener } from 'node:http';
import { generateApiKey, generateKeyId } from '../../src/auth/api-key.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import type { KeyRecord, KeyStore } from '../../src/auth/key-store.ts';
import { MemoryKeyStore } from '../../src/auth/memory-key-store.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { Environment, GatewayConfig } from '../../src/config/schema.ts';
import type { LimitStore } from '../../src/limits/limit-store.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { createLogger } from '../../src/observability/logger.ts';
import type { GatewayMetrics } from '../../src/observability/metrics.ts';
import type { RunningGateway } from '../../src/server/server.ts';
import { buildGateway, type Gateway } from '../../src/wiring/compose.ts';
import type { UpstreamIdentity } from '../../src/identity/upstream-identity.ts';
import type { Tracing } from '../../src/tracing/tracer.ts';

/** 2026-11-21T12:00:00Z: after the deprecation date, well before the sunset. */
export const TEST_NOW = Date.parse('2026-11-21T12:00:00Z');

export interface TestGatewayOptions {
  upstreamUrl: string;
  environment?: Environment;
  env?: Record<string, string>;
  overrides?: Record<string, unknown>;
  keyStore?: KeyStore;
  /** Where rate-limit hits are counted; each process alone (in memory) when absent. */
  rateLimitStore?: LimitStore;
  /** Who called, asserted upstream (from `loadUpstreamIdentity`); unsigned when absent. */
  identity?: UpstreamIdentity;
  /** What a reload reads: the overrides then in force (laid over the file as at start, with the same env). */
  reloadOverrides?: () => Record<string, unknown>;
  /** Spans recorded and exported (`tracingFromEnvironment`); trace context only propagated when absent. */
  tracing?: Tracing;
}

export interface TestGateway {
  /** The production handler (request tracker and pipeline), built by the composition root: call it in process. */
  app: RequestListener;
  /** The classes the public listener makes requests and responses with. */
  messageClasses: Gateway['messageClasses'];
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
  metrics: GatewayMetrics;
  /** The shadow comparisons' report (in memory). */
  shadowReport: Gateway['shadowReport'];
  /** The Prometheus exposition, as /metrics serves it. */
  scrape(): Promise<string>;
  /** What the admin listener is built from (`createAdminApp`), as the server builds it. */
  admin: Gateway['admin'];
  /** Starts the real listeners (public and admin) on the configured ports; their shutdown closes the gateway. */
  listen(): Promise<RunningGateway>;
  /** A configuration reload, as SIGHUP does it: reads `reloadOverrides` (or the start's overrides again). */
  reload: Gateway['reload'];
  close(): Promise<void>;
}

/** The production wiring (src/wiring/compose.ts) with a memory key store, a fixed clock and captured logs. */
export function buildTestGateway(options: TestGatewayOptions): TestGateway {
  const environment = options.environment ?? 'production';
  const read = (overrides: Record<string, unknown> | undefined) =>
    loadConfig(
      { UPSTREAM_URL: options.upstreamUrl, GATEWAY_ENVIRONMENT: environment, ...options.env },
      // Production's answer checks sample at random: none here, so a test's log lines and counters do not depend on a draw.
      { shutdown: { drainDelayMs: 0, gracePeriodMs: 2000 }, contractResponses: { production: { mode: 'report', sample: 0 } }, ...overrides },
    );
  const config = read(options.overrides);
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
  const gateway = buildGateway({
    config,
    logger,
    clock,
    hashKey,
    stores: () => ({ keyStore: options.keyStore ?? keyStore, ...(options.rateLimitStore ? { rateLimitStore: options.rateLimitStore } : {}), checks: [] }),
    reloadConfig: () => read(options.reloadOverrides ? options.reloadOverrides() : options.overrides),
    ...(options.identity ? { identity: options.identity } : {}),
    ...(options.tracing ? { tracing: options.tracing } : {}),
  });
  return {
    app: gateway.handler,
    messageClasses: gateway.messageClasses,
    config,
    clock,
    keyStore,
    apiKey,
    keyId: 'key_primary',
    addKey,
    hashKey,
    logs,
    rawLogs: () => raw.join(''),
    metrics: gateway.metrics,
    shadowReport: gateway.shadowReport,
    scrape: () => gateway.metrics.registry.metrics(),
    admin: gateway.admin,
    listen: () => gateway.listen(),
    reload: () => gateway.reload(),
    close: () => gateway.close(),
  };
}
