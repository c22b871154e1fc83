// The composition root: one gateway built from its configuration and the parts that differ (stores), for start, demo and tests.
import type { RequestListener } from 'node:http';
import type { Logger } from 'pino';
import packageJson from '../../package.json' with { type: 'json' };
import type { AdminAppOptions, ReadinessCheck } from '../admin/admin-app.ts';
import { createAdminTokenSource } from '../admin-api/tokens.ts';
import type { KeyHasher, PepperedKeyHasher } from '../auth/key-hash.ts';
import type { KeyStore } from '../auth/key-store.ts';
import { configurationHash } from '../config/reload-plan.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { allOperations, loadApiVersions, type ApiVersion } from '../contract/api-versions.ts';
import { createAppMessages, type AppMessages } from '../forks/app-messages.ts';
import { operationSunsets } from '../contract/operations.ts';
import { createDeprecatedCallRecorder, MemoryDeprecatedCallStore, readDeprecationReport, type DeprecatedCallStore } from '../observability/deprecated-calls.ts';
import { cacheDeprecationReport } from '../observability/cached-deprecation-report.ts';
import { createMetrics, type GatewayMetrics } from '../observability/metrics.ts';
import type { TlsMetrics } from '../observability/tls-metrics.ts';
import { createUsageRecorder, MemoryUsageStore, type UsageStore } from '../observability/usage.ts';
import { readUsageReport } from '../observability/usage-report.ts';
import { OPENMETRICS_CONTENT_TYPE } from '../observability/open-metrics.ts';
import { createRequestCompletion } from '../observability/request-completion.ts';
import { registerTraceExportMetrics } from '../observability/trace-export-metrics.ts';
import { propagationOnly, type Tracing } from '../tracing/tracer.ts';
import { createRequestTracker, type RequestTracker } from '../server/request-tracker.ts';
import { BrownoutBoard, compileBrownoutSchedule } from '../policy/brownouts.ts';
import { InProcessRateLimitStore } from '../limits/in-process-rate-limit-store.ts';
import type { LimitStore } from '../limits/limit-store.ts';
import { startGateway, type RunningGateway } from '../server/server.ts';
import type { Clock } from '../time/clock.ts';
import { loadUpstreamIdentity, unsignedIdentity, type UpstreamIdentity } from '../identity/upstream-identity.ts';
import { CircuitBreakers } from '../proxy/circuit-breakers.ts';
import { upstreamReachable } from '../proxy/upstream-reachable.ts';
import { readBackendTls, upstreamTlsFiles, type BackendTls } from '../proxy/upstream-tls.ts';
import { createListenerCertificates, readListenerPairs, type ListenerCertificates } from '../server/listener-tls.ts';
import { gatewayAdminApi, redisAdmin, refuseTokenFileWithoutAdmin, type StoreAdmin } from './admin-operations.ts';
import { buildPipeline, createLivePipeline, type PipelineShared } from './pipeline.ts';
import { createRedisStores, type RedisStores } from './redis-stores.ts';
import { createReload, type ReloadOutcome } from './reload.ts';
import { NoiseBook } from '../shadow/noise-book.ts';
import { createMemoryShadowReport, createRedisShadowReport, type ShadowReport } from '../shadow/report-store.ts';
import { certificateDigests, watchCertificates } from './certificate-watch.ts';
import { reportClientCertificates } from './client-certificates.ts';

/** The stores behind the pipeline; built once the metrics exist, so they can report into them. */
export interface Stores {
  keyStore: KeyStore;
  /** Shared rate-limit counters; absent, each process counts alone (the demo). */
  rateLimitStore?: LimitStore;
  /** Readiness checks of the stores' dependencies (Redis): in /readyz and dependency_up. */
  checks: readonly ReadinessCheck[];
  /** This replica's clock against the shared store's (Redis's TIME), in seconds: `redis_clock_skew_seconds`; absent without Redis. */
  clockSkew?: () => Promise<number | undefined>;
  /** What this replica must have done before it is ready that is not a dependency's health (the pepper verified): in /readyz only. */
  conditions?: readonly ReadinessCheck[];
  /** Where the deprecation report's counts add up across replicas; absent, this process alone (in memory). */
  deprecatedCalls?: DeprecatedCallStore;
  /** Where usage per consumer adds up across replicas; absent, this process alone (in memory). */
  usage?: UsageStore;
  /** Where shadow comparisons are reported (config `shadow`), across replicas (in Redis); absent, this process alone (in memory). */
  shadowReport?: ShadowReport;
  /** What the admin API changes keys and brownouts with (in Redis); absent, the gateway has no admin API. */
  admin?: StoreAdmin;
  close?: () => Promise<void> | void;
}

export interface GatewayParts<S extends Stores = Stores> {
  config: GatewayConfig;
  logger: Logger;
  clock: Clock;
  hashKey: KeyHasher;
  /** Given the metrics to report into and the brownout board to keep up to date (operator brownouts). */
  stores: (metrics: GatewayMetrics, brownouts: BrownoutBoard) => S;
  /** Who called, asserted to the upstream (loaded at start-up by `loadUpstreamIdentity`); unsigned when absent. */
  identity?: UpstreamIdentity;
  /** Spans recorded and exported (`tracingFromEnvironment`, from OTEL_*); absent, trace context is only propagated. */
  tracing?: Tracing;
  /** Released after everything else, on shutdown (the demo's backend). */
  onClosed?: () => Promise<void> | void;
  /** Reads the configuration again as `config` was read, for a reload; absent, a reload re-reads only the documents and key files. */
  reloadConfig?: () => GatewayConfig;
  /** For a reload's log: the environment variables that override a value the file now gives. */
  shadowedSettings?: () => Array<{ variable: string; key: string }>;
  /** Reads the pepper as start-up did (loadPepper), a check of every reload; absent where keys are kept in memory. */
  readPepper?: (config: GatewayConfig) => unknown;
}

export interface Gateway<S extends Stores = Stores> {
  config: GatewayConfig;
  metrics: GatewayMetrics;
  /** The shadow comparisons' report (the admin route and the CLI read it). */
  shadowReport: ShadowReport;
  /** What `parts.stores` built. */
  stores: S;
  /** What the public listener serves: the request tracker around the pipeline. Tests call it in process. */
  handler: RequestListener;
  /** The public listener's request and response classes: made with the prototypes of the app serving new requests. */
  messageClasses: AppMessages['classes'];
  tracker: RequestTracker;
  admin: Omit<AdminAppOptions, 'isAcceptingTraffic'>;
  /** Counts the connections a listener closed at its cap or for an answer left untaken (`connections_evicted_total`). */
  onConnectionClosed: GatewayMetrics['connectionClosed'];
  /** The TLS listeners' certificate pairs in force (none: both listeners speak plain HTTP). */
  certificates: ListenerCertificates;
  /** Counts a client handshake a TLS listener did not complete (`tls_handshake_failures_total`). */
  onHandshakeFailed: TlsMetrics['handshakeFailed'];
  /** Starts both listeners; their shutdown releases the gateway. */
  listen(): Promise<RunningGateway>;
  /** Re-reads and checks the configuration, then serves new requests with it; or keeps the running one (SIGHUP). */
  reload(): Promise<ReloadOutcome>;
  /** Releases the upstream pool and the stores (idempotent). */
  close(): Promise<void>;
}

export function buildGateway<S extends Stores>(parts: GatewayParts<S>): Gateway<S> {
  const { config, logger } = parts;
  if (!parts.identity && config.upstreamIdentity.keyFile !== null) {
    // Never forward unsigned because a caller forgot to load the key: fail before any connection is opened.
    throw new Error('buildGateway: upstreamIdentity.keyFile is set; load it with loadUpstreamIdentity and pass `identity`');
  }
  const versions = loadApiVersions(config.sources);
  const operations = allOperations(versions);
  // The watch's baseline first, then the files as served: a renewal in between is a change, not the baseline.
  const certificateFiles = (served: GatewayConfig) =>
    [
      served.listen.tls.certFile,
      served.listen.tls.keyFile,
      served.listen.adminTls.certFile,
      served.listen.adminTls.keyFile,
      ...upstreamTlsFiles(served),
    ].filter((file): file is string => file !== null);
  const certificateBaseline = certificateDigests(certificateFiles(config));
  // Read before any connection is opened: a certificate that does not parse stops start-up, naming its setting.
  const upstreamTls = readBackendTls(config);
  const listenerPairs = readListenerPairs(config.listen);
  // The first version's check keeps its name (`upstream`); the others are named by their base path.
  const upstreamChecks: ReadinessCheck[] = versions.map(({ contract, source }, index) => ({
    name: index === 0 ? 'upstream' : `upstream ${contract.basePath}`,
    critical: false,
    check: () => upstreamReachable(source.upstreamBaseUrl),
  }));
  // Read before any connection is opened, like the pepper: a short token stops start-up, naming ADMIN_API_TOKEN_FILE.
  const adminTokens = createAdminTokenSource(config.adminApi.tokenFile);
  const brownouts = new BrownoutBoard(compileBrownoutSchedule(operations, config.deprecations));
  const metrics = createMetrics({
    environment: config.environment,
    tlsListeners: (['listener', 'admin'] as const).filter((role) => listenerPairs[role] !== undefined),
    version: packageJson.version,
    // Their upstream and rate-limit series start at 0; the gateway's own answers are never forwarded or rate limited.
    operations: operations.filter((operation) => operation.answeredBy === undefined).map((operation) => operation.id),
    sunsets: operationSunsets(operations),
    deprecatedOperations: brownouts.operations,
    markedOperations: operations.flatMap(({ id, stability }) => (stability ? [{ operation: id, stability }] : [])),
    brownoutActive: (operation) => brownouts.active(operation, parts.clock.now()) !== undefined,
    resources: {
      cpuRequestCores: config.resources.cpuRequestMillicores === null ? null : config.resources.cpuRequestMillicores / 1000,
      memoryLimitBytes: config.resources.memoryLimitBytes,
    },
  });
  const certificates = createListenerCertificates(listenerPairs, (pairs) => {
    metrics.tls.held('listener', pairs.listener?.notAfter);
    metrics.tls.held('admin', pairs.admin?.notAfter);
    // Which certificate each TLS listener serves now, at start and after each reload: how an operator tells a renewal was taken up.
    const served = Object.entries(pairs).map(([role, pair]) => [role, { fingerprint: pair.fingerprint, notAfter: pair.notAfter.toISOString() }]);
    if (served.length > 0) logger.info({ certificates: Object.fromEntries(served) }, 'TLS certificates in force on the listeners');
  });
  reportClientCertificates(metrics.tls, config.environment, upstreamTls);
  const tracing = parts.tracing ?? propagationOnly();
  registerTraceExportMetrics(metrics.registry, tracing, config.environment);
  const stores = parts.stores(metrics, brownouts);
  const deprecatedCallStore = stores.deprecatedCalls ?? new MemoryDeprecatedCallStore();
  // Counted in process and written in batches: the report costs the request path no Redis round trip.
  const deprecatedCalls = createDeprecatedCallRecorder({
    store: deprecatedCallStore,
    clock: parts.clock,
    flushIntervalMs: config.deprecationReport.flushIntervalMs,
    logger,
  });
  const usageStore = stores.usage ?? new MemoryUsageStore();
  // Counted at completion and written in batches, like the deprecated calls: usage costs the request path no round trip.
  const usage = createUsageRecorder({
    store: usageStore,
    clock: parts.clock,
    flushIntervalMs: config.usage.flushIntervalMs,
    onNearLimit: metrics.quotaNearLimit,
    logger,
  });
  // Read at most once a flush interval, whoever asks (the report's counts move no faster): a caller cannot make Redis read it per request.
  const deprecationReport = cacheDeprecationReport(() => readDeprecationReport(deprecatedCallStore, brownouts.operations), {
    maxAgeMs: config.deprecationReport.flushIntervalMs,
    clock: parts.clock,
  });
  // The admin API's reload is the one SIGHUP runs (made below, once the pipeline it swaps exists).
  const adminApi = gatewayAdminApi(config, stores.admin, {
    tokens: adminTokens,
    deprecations: deprecationReport,
    usage: { retentionDays: config.usage.retentionDays, read: (query) => readUsageReport(usageStore, query) },
    reload: () => reload(),
    clock: parts.clock,
    logger,
    metrics,
  });
  // Counted in process and written in batches like usage: a comparison costs no round trip.
  const shadowReport =
    stores.shadowReport ??
    createMemoryShadowReport({
      clock: parts.clock,
      retentionDays: config.shadow.report.retentionDays,
      flushIntervalMs: config.shadow.report.flushIntervalMs,
      logger,
    });
  const identity = parts.identity ?? unsignedIdentity(config.upstreamIdentity.consumerHeaders);
  const { keyStore, checks, conditions = [] } = stores;
  // Without shared counters, one in-process store for every pipeline generation: a reload keeps the day's quotas.
  const rateLimitStore = stores.rateLimitStore ?? new InProcessRateLimitStore(parts.clock);
  const shared: PipelineShared = {
    keyStore,
    rateLimitStore,
    hashKey: parts.hashKey,
    clock: parts.clock,
    brownouts,
    logger,
    metrics,
    breakers: new CircuitBreakers(metrics.upstreamCircuit),
    shadowSink: shadowReport,
    noise: new NoiseBook(),
  };
  const build = (served: GatewayConfig, documents: readonly ApiVersion[], asserted: UpstreamIdentity, tls: BackendTls) =>
    buildPipeline(served, documents, asserted, tls, shared);
  // The public listener's requests and responses, made with the prototypes of the generation that will serve them.
  const messages = createAppMessages();
  // A retired generation's requests may still wait for their body, then for the upstream.
  const live = createLivePipeline(
    build(config, versions, identity, upstreamTls),
    (retired) => retired.config.listen.requestTimeoutMs + retired.config.upstream.totalTimeoutMs,
    logger,
    messages,
  );
  const reload = createReload({
    loadConfig: parts.reloadConfig ?? (() => config),
    ...(parts.shadowedSettings ? { shadowedSettings: parts.shadowedSettings } : {}),
    ...(parts.readPepper ? { readPepper: parts.readPepper } : {}),
    live,
    build,
    certificates,
    brownouts,
    alsoReload: (next) => {
      refuseTokenFileWithoutAdmin(next, stores.admin);
      return adminTokens.prepare(next.adminApi.tokenFile);
    },
    logger,
    metrics,
    clock: parts.clock,
  });
  const tracker = createRequestTracker({
    serve: live.handle,
    maxInFlight: config.listen.maxInFlight,
    onShed: metrics.shed,
    shedAnswerHeaders: (req, res) => live.current.announceCors?.(req, res),
    tracing,
    onComplete: createRequestCompletion(metrics, logger, config.environment, tracing, deprecatedCalls.record, usage.record),
  });
  // Renewed certificates (cert-manager rewriting a Secret) are taken up by the reload SIGHUP runs, without a signal.
  const watch =
    config.certificates.watchIntervalMs > 0
      ? watchCertificates({
          files: () => certificateFiles(live.current.config),
          baseline: certificateBaseline,
          intervalMs: config.certificates.watchIntervalMs,
          reload: async () => {
            logger.info('certificate or key files changed: reloading');
            return (await reload()).result === 'success';
          },
        })
      : undefined;
  metrics.readAtScrape({
    inFlight: tracker.inFlight,
    dependencies: [...upstreamChecks, ...checks],
    upstreamPools: live.upstreamPools,
    ...(stores.clockSkew ? { clockSkew: stores.clockSkew } : {}),
  });

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      watch?.stop();
      await live.close();
      // After the listeners drained: every request is counted; written before the stores' connections close.
      await deprecatedCalls.close();
      await usage.close();
      // After the pipeline's pools closed: every shadow under way has ended.
      await shadowReport.close();
      // Every request's span has ended: what is queued is sent (within the exporter's timeout).
      await tracing.shutdown();
      await stores.close?.();
      await parts.onClosed?.();
    })());
  const gateway: Gateway<S> = {
    config,
    metrics,
    shadowReport,
    stores,
    handler: tracker.listener,
    messageClasses: messages.classes,
    tracker,
    admin: {
      checks: [...conditions, ...checks, ...upstreamChecks],
      metrics: {
        contentType: metrics.registry.contentType,
        render: () => metrics.registry.metrics(),
        openMetrics: { contentType: OPENMETRICS_CONTENT_TYPE, render: () => metrics.openMetrics() },
      },
      deprecations: deprecationReport,
      ...(adminApi ? { api: adminApi.api, guard: adminApi.guard } : {}),
      // The running generation's keys: a reload can rotate them, or turn signing on or off.
      jwks: () => live.current.identity.jwks?.document(),
      onUnexpected: (error) => logger.error({ err: error }, 'unexpected error on the admin listener'),
    },
    onConnectionClosed: metrics.connectionClosed,
    certificates,
    onHandshakeFailed: metrics.tls.handshakeFailed,
    // A shutting-down gateway reloads nothing on its own: the watch stops as the drain begins.
    listen: () => startGateway({ gateway, logger, onDraining: () => watch?.stop(), onClosed: close }),
    reload,
    close,
  };
  return gateway;
}

/** Loads the identity signing keys (a bad key file stops start-up, naming the setting), then builds and starts a gateway. */
export async function composeGateway<S extends Stores>(
  parts: GatewayParts<S>,
): Promise<RunningGateway & { metrics: GatewayMetrics; reload: Gateway['reload']; stores: S }> {
  const { config, logger } = parts;
  const identity = parts.identity ?? (await loadUpstreamIdentity(config.upstreamIdentity, { environment: config.environment, clock: parts.clock }));
  logger.info(
    { identity: identity.summary },
    identity.summary.signing ? 'identity assertion on: forwarded requests carry a signed token' : 'identity assertion off: the upstream gets no Authorization',
  );
  const gateway = buildGateway({ ...parts, identity });
  logger.info({ configHash: configurationHash(config) }, 'configuration loaded');
  return { ...(await gateway.listen()), metrics: gateway.metrics, reload: gateway.reload, stores: gateway.stores };
}

/** The production wiring: keys, rate-limit counters, brownouts and deprecated-call counts in Redis, reporting into the metrics. */
export async function composeRedisGateway(
  parts: Omit<GatewayParts, 'stores' | 'hashKey'> & { hashKey: PepperedKeyHasher },
): Promise<RunningGateway & { metrics: GatewayMetrics; reload: Gateway['reload']; redis: RedisStores }> {
  const { config, logger, clock } = parts;
  const { stores, ...running } = await composeGateway({
    ...parts,
    stores: (metrics, brownouts) => {
      const redis = createRedisStores(config, {
        logger,
        clock,
        brownouts,
        onLookup: metrics.keyCacheLookup,
        onKeyCacheCleared: metrics.keyCacheCleared,
        onRateLimitStoreError: metrics.rateLimitStoreError,
        pepperFingerprint: parts.hashKey.pepperFingerprint,
        onPepperChecked: metrics.pepperChecked,
        onKeyStoreChecked: metrics.keyStoreChecked,
        onKeyStoreEmptied: metrics.keyStoreEmptied,
        redisCommand: metrics.redisCommand,
      });
      return {
        redis,
        admin: redisAdmin(redis.client, { config, hashKey: parts.hashKey, brownouts, clock, logger }),
        keyStore: redis.keyStore,
        rateLimitStore: redis.rateLimitStore,
        deprecatedCalls: redis.deprecatedCalls,
        usage: redis.usage,
        shadowReport: createRedisShadowReport(redis.client, {
          clock,
          logger,
          keyPrefix: config.redis.keyPrefix,
          retentionDays: config.shadow.report.retentionDays,
          flushIntervalMs: config.shadow.report.flushIntervalMs,
        }),
        checks: [redis.readiness],
        clockSkew: () => redis.clockSkew.read(),
        conditions: [redis.pepper],
        close: redis.close,
      };
    },
  });
  return { ...running, redis: stores.redis };
}
