// The gateway's Prometheus metrics: one registry per gateway (no global), every name under one prefix.
import { collectDefaultMetrics, Counter, Gauge, Histogram, type LabelValues, type Registry } from 'prom-client';
import type { AuthRefusalReason } from '../auth/authenticate.ts';
import type { KeyCacheClearReason } from '../auth/key-events.ts';
import type { StabilityMarker } from '../config/schema.ts';
import type { DeprecatedRefusalReason } from '../policy/deprecation.ts';
import { CONTRACT_VIOLATION_KINDS } from '../contract/check-answer.ts';
import { UNCHECKED_REASONS, type AnswerVerdict } from '../proxy/answer-check.ts';
import { createTlsMetrics, type TlsMetrics } from './tls-metrics.ts';
import { CONNECTION_CLOSINGS, type ConnectionClosing } from './connection-closings.ts';
import { UPSTREAM_FAILURE_KINDS, type UpstreamFailureKind } from '../proxy/upstream-failure.ts';
import type { RedisCommandKind, RedisCommandObserver } from '../redis/command-timing.ts';
import { QUOTA_PERIODS, type QuotaPeriod } from '../limits/quota-periods.ts';
import { ADMIN_ACTIONS, ADMIN_RESULTS, type AdminAction, type AdminResult } from './admin-actions.ts';
import { boundCounter, type BoundCounter } from '../forks/bound-series.ts';
import { RETIRE_REASONS, type RetireReason } from '../forks/upstream-stray-bytes.ts';
import { ExemplarSeries } from './exemplar-series.ts';
import { ExpositionRegistry } from './exposition.ts';
import { renderOpenMetrics } from './open-metrics.ts';
import { createSaturationMetrics, type PodResources, type UpstreamPoolReading } from './saturation-metrics.ts';

export const METRIC_PREFIX = 'petstore_gateway_';

/** The `operation` label of requests that matched no operation of the document: never the raw path. */
export const UNMATCHED_OPERATION = 'none';

/** Sub-millisecond (the gateway's own work) to 10 s (the upstream timeout). */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Distinct consumers tracked on deprecated operations before the rest are counted as `other`. */
export const DEFAULT_DEPRECATED_CONSUMER_CAP = 200;

/** The backend statuses that mean it refused the gateway itself (see refusesTheGateway). */
export const REFUSED_IDENTITY_STATUSES = ['401', '403'] as const;

/** Every authentication refusal reason; `satisfies` makes the compiler insist on the whole list. */
export const AUTH_REFUSAL_REASONS = Object.keys({
  missing: true,
  malformed: true,
  unknown: true,
  revoked: true,
  expired: true,
  wrong_environment: true,
} satisfies Record<AuthRefusalReason, true>) as readonly AuthRefusalReason[];

/** Every reason the whole key cache is dropped; `satisfies` makes the compiler insist on the whole list. */
export const KEY_CACHE_CLEAR_REASONS = Object.keys({
  baseline: true,
  resubscribed: true,
  event_skipped: true,
  epoch_ahead: true,
  epoch_back: true,
} satisfies Record<KeyCacheClearReason, true>) as readonly KeyCacheClearReason[];

export interface MetricsOptions {
  environment: string;
  version: string;
  /** Deprecated operations and their sunset, for the days-to-sunset gauge. */
  sunsets: ReadonlyArray<{ operation: string; sunset: Date }>;
  /**
   * The document's operation ids. Counters labelled by operation (upstream errors, rate limited) start
   * at 0 for each, so panels and alerts read 0 rather than "No data" before the first event.
   */
  operations?: readonly string[];
  deprecatedConsumerCap?: number;
  /** Deprecated operations: their refusal counters (sunset, brownout) and brownout gauge start at 0. */
  deprecatedOperations?: readonly string[];
  /** Whether an operation is browned out now, read at scrape time. */
  brownoutActive?: (operation: string) => boolean;
  /** Operations marked experimental or beta: their stability refusal counters start at 0. */
  markedOperations?: ReadonlyArray<{ operation: string; stability: StabilityMarker }>;
  /** Collect Node's process metrics (off in unit tests that assert exact output). */
  processMetrics?: boolean;
  /** The CPU request and memory limit the pod gave this container, when it was told them. */
  resources?: PodResources;
  /** The listeners that speak TLS (their handshake failure series start at 0). */
  tlsListeners?: ReadonlyArray<'listener' | 'admin'>;
}

export interface CompletedRequest {
  operation: string | undefined;
  method: string;
  statusCode: number;
  durationSeconds: number;
  /** Upstream exchange time, when the request was proxied. */
  upstreamSeconds?: number;
  /** The request's trace, when its spans were recorded and sampled: the latency histograms' exemplar. */
  traceId?: string | undefined;
}

/** The exemplar label of a latency observation: Grafana's default for a link to the trace. */
export const EXEMPLAR_TRACE_LABEL = 'trace_id';

/** What the gauges read when scraped, from parts built after the metrics (which report into them). */
export interface ScrapedState {
  /** Requests in flight: the server's request tracker. */
  inFlight(): number;
  /** Probes of Redis and the upstream. */
  dependencies: ReadonlyArray<{ name: string; check(): Promise<boolean> }>;
  /** The upstream pools' use, per version; absent, no pool gauges have series. */
  upstreamPools?: () => readonly UpstreamPoolReading[];
  /** Redis's clock minus this replica's, in seconds (undefined: Redis did not answer); absent without Redis. */
  clockSkew?: () => Promise<number | undefined>;
}

export interface GatewayMetrics {
  registry: Registry;
  /** The registry as OpenMetrics (with the latency histograms' exemplars); `registry.metrics()` stays the Prometheus text format. */
  openMetrics(): Promise<string>;
  /** Registers the gauges read at scrape time (once: a second call throws, as the names are taken). */
  readAtScrape(state: ScrapedState): void;
  requestCompleted(request: CompletedRequest): void;
  upstreamFailed(operation: string, kind: UpstreamFailureKind): void;
  /** Header fields of one backend answer the relay policy dropped. */
  upstreamHeadersDropped(operation: string, count: number): void;
  /** An upstream connection the stray-byte watch closed (src/forks/upstream-stray-bytes.ts), and why. */
  upstreamConnectionRetired(reason: RetireReason): void;
  /** A backend 401 or 403, answered 502 upstream_refused_identity. */
  upstreamRefusedIdentity(operation: string, upstreamStatus: number): void;
  /** A backend answer checked against the document (config `contractResponses`), and what was found. */
  upstreamContractChecked(operation: string, upstreamStatus: number, verdict: AnswerVerdict): void;
  /**
   * A shadowed request (config `shadow`) compared with staging's answer, or skipped, by result (src/shadow/shadow-outcome.ts's
   * ShadowResult: its callers' type bounds the label; src/shadow imports this layer, so the type is not named here).
   */
  shadowCompared(operation: string, result: string): void;
  /** One difference (not noise) between staging's answer and production's, by kind (DifferenceKind, likewise). */
  shadowDiffered(operation: string, kind: string): void;
  authRefused(reason: AuthRefusalReason): void;
  keyCacheLookup(outcome: 'hit' | 'miss'): void;
  /** The whole key cache dropped (src/auth/key-events.ts says when and why). */
  keyCacheCleared(reason: KeyCacheClearReason): void;
  deprecatedCall(operation: string, keyId: string, consumer: string): void;
  deprecatedRefused(operation: string, reason: DeprecatedRefusalReason): void;
  /** A marked operation refused 403 stability_not_allowed (denied here, or the key did not opt in). */
  stabilityRefused(operation: string, stability: StabilityMarker): void;
  rateLimited(operation: string): void;
  /** A request refused 429 quota_exceeded: the key's daily or monthly quota is used up. */
  quotaRefused(operation: string, period: QuotaPeriod): void;
  rateLimitStoreError(): void;
  rateLimitPassed(): void;
  upstreamCircuit(state: 'closed' | 'open' | 'half_open'): void;
  shed(): void;
  /** A connection closed at its listener's cap to admit a newer one, or for an answer its client stopped taking (src/server/connection-cap.ts). */
  connectionClosed(listener: 'listener' | 'admin', reason: ConnectionClosing): void;
  /** A configuration reload (SIGHUP) taken up, or refused with the running configuration kept. */
  configReload(result: 'success' | 'failure'): void;
  /** Whether the keys' pepper fingerprint in Redis matched this gateway's pepper at the last check. */
  pepperChecked(matches: boolean): void;
  /** How many keys are at or past 80% of a quota in the current UTC day and month, across replicas (read at each usage flush). */
  quotaNearLimit(counts: Readonly<Record<QuotaPeriod, number>>): void;
  /** How many keys the key store held at the last check (src/auth/key-store-watch.ts). */
  keyStoreChecked(keys: number): void;
  /** The key store was seen emptied after holding keys. */
  keyStoreEmptied(): void;
  /** A change made through the admin API, or a failed authentication to it (`authenticate`). */
  adminAction(action: AdminAction, result: AdminResult): void;
  /** The deprecated operations and sunsets of the documents a reload put in force. */
  deprecationsChanged(operations: readonly string[], sunsets: MetricsOptions['sunsets']): void;
  /** The observer of one kind of Redis command (latency and errors), for the store that sends it. */
  redisCommand(kind: RedisCommandKind): RedisCommandObserver;
  /** When the certificates the gateway holds, and the backends' it meets, expire; the handshakes the listeners refused. */
  tls: TlsMetrics;
}

export function createMetrics(options: MetricsOptions): GatewayMetrics {
  // Its Prometheus text carries no control character, whatever a label value holds (exposition.ts).
  const registry: Registry = new ExpositionRegistry();
  const { environment } = options;
  const registers = [registry];
  const name = (suffix: string) => METRIC_PREFIX + suffix;

  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX, labels: { environment } });

  // Every series is labelled by environment, last.
  const counter = <L extends string>(suffix: string, help: string, labels: readonly L[]) =>
    new Counter({ name: name(suffix), help, labelNames: [...labels, 'environment'] as const, registers });
  const gauge = <L extends string>(suffix: string, help: string, labels: readonly L[], collect?: (this: Gauge<L | 'environment'>) => void | Promise<void>) =>
    new Gauge({ name: name(suffix), help, labelNames: [...labels, 'environment'] as const, registers, ...(collect && { collect }) });
  // Kept per bucket, written only in the OpenMetrics format; recorded only for sampled requests.
  const latency = <L extends string>(suffix: string, help: string, labels: readonly L[]) =>
    new Histogram({
      name: name(suffix),
      help,
      labelNames: [...labels, 'environment'] as const,
      buckets: LATENCY_BUCKETS,
      enableExemplars: true,
      registers: [],
    });

  const requests = counter('requests_total', 'Requests answered, by operation (operationId, or "none"), method, status code and environment.', [
    'operation',
    'method',
    'status_code',
  ]);
  const requestDuration = latency('request_duration_seconds', 'Time from a request entering the gateway to its response being written.', [
    'operation',
    'method',
    'status_code',
  ]);
  const upstreamDuration = latency('upstream_duration_seconds', 'Time from sending a request upstream to the end of the upstream response.', ['operation']);
  const overhead = latency('overhead_seconds', "The gateway's own time on a proxied request: its total duration less the upstream exchange.", ['operation']);
  // prom-client refuses a histogram with exemplars in the constructor's `registers` of a registry of the
  // Prometheus text format (which never writes them); registered here, they are written in both formats,
  // their exemplars in the OpenMetrics one only (renderOpenMetrics).
  for (const histogram of [requestDuration, upstreamDuration, overhead]) registry.registerMetric(histogram);
  const upstreamErrors = counter('upstream_errors_total', `Failed upstream exchanges by operation and kind (${UPSTREAM_FAILURE_KINDS.join(', ')}).`, [
    'operation',
    'kind',
  ]);
  const retiredConnections = counter(
    'upstream_connections_retired_total',
    `Upstream HTTP/1.1 connections closed, never to be used again, because bytes arrived outside an answer, by reason (${RETIRE_REASONS.join(', ')}).`,
    ['reason'],
  );
  for (const reason of RETIRE_REASONS) retiredConnections.inc({ reason, environment }, 0);
  // By operation only: the names are the backend's to invent, and a label per name would be unbounded.
  const droppedHeaders = counter(
    'upstream_response_headers_dropped_total',
    'Header fields of backend answers the gateway did not relay (neither declared for the operation and status nor standard, or echoing the identity token), by operation.',
    ['operation'],
  );
  const refusedIdentity = counter(
    'upstream_refused_identity_total',
    "Backend 401 and 403 answers (the backend refused the gateway's identity token or is set up wrong), answered 502 upstream_refused_identity, by operation and the backend's status.",
    ['operation', 'upstream_status'],
  );
  const contractChecks = counter(
    'upstream_contract_checks_total',
    'Backend answers checked against the interface document (contractResponses), valid or not, by operation and status class of the backend answer: the ratio of violations to these is the drift.',
    ['operation', 'status_class'],
  );
  const contractViolations = counter(
    'upstream_contract_violations_total',
    `Backend answers that broke the interface document, by operation, status class of the backend answer and kind (${CONTRACT_VIOLATION_KINDS.join(', ')}).`,
    ['operation', 'status_class', 'kind'],
  );
  const contractUnchecked = counter(
    'upstream_contract_unchecked_total',
    `Backend answers chosen for checking that could not be checked and were relayed as they came, by operation and reason (${UNCHECKED_REASONS.join(', ')}).`,
    ['operation', 'reason'],
  );
  // By operation (the document's ids) and a fixed list: never the pointer, which is the backends' to invent.
  const shadowComparisons = counter(
    'shadow_comparisons_total',
    'Shadowed requests (a copy of a production request sent to staging once production answered), by operation and result (match, differ, staging_error, staging_off_contract, skipped).',
    ['operation', 'result'],
  );
  const shadowDifferences = counter(
    'shadow_differences_total',
    "Differences between staging's answer and production's to a shadowed request, noise apart, by operation and kind (missing, extra, type, value, order, status, header).",
    ['operation', 'kind'],
  );
  const authRefusals = counter(
    'auth_refusals_total',
    'Requests refused by authentication, by reason (missing, malformed, unknown, revoked, expired, wrong_environment).',
    ['reason'],
  );
  const keyCache = counter('key_cache_lookups_total', 'API key lookups by result: hit (answered from the in-process cache) or miss (Redis was asked).', [
    'result',
  ]);
  const keyCacheClears = counter(
    'key_cache_clears_total',
    'Times the whole API key cache was dropped, by reason: baseline (the first epoch read after start), resubscribed (key events came back after a cut), event_skipped, epoch_ahead (announcements were lost), epoch_back (Redis lost writes).',
    ['reason'],
  );
  const rateLimited = counter('rate_limited_total', 'Requests refused with 429 by the per-key rate limit, by operation.', ['operation']);
  const quotaRefusals = counter(
    'quota_refused_total',
    "Requests refused with 429 quota_exceeded because the key's quota for the period (day or month, UTC) is used up, by operation.",
    ['operation', 'period'],
  );
  const rateLimitStoreErrors = counter('rate_limit_store_errors_total', 'Rate-limit counter updates that failed (Redis unreachable or slow).', []);
  const rateLimitPassed = counter(
    'rate_limit_passed_total',
    'Requests let through without a rate-limit check because the store failed (onStoreError: allow).',
    [],
  );
  const deprecatedRequests = counter(
    'deprecated_requests_total',
    'Requests to deprecated operations by consumer; past the consumer cap, further consumers count as key_id="other".',
    ['operation', 'key_id', 'consumer'],
  );
  const deprecatedRefusals = counter(
    'deprecated_refusals_total',
    'Requests to deprecated operations refused with 410, by operation and reason: sunset (removed) or brownout.',
    ['operation', 'reason'],
  );
  const stabilityRefusals = counter(
    'stability_refusals_total',
    'Requests to operations marked experimental or beta refused with 403 stability_not_allowed (the environment denies them, or the key did not opt in), by operation and marker.',
    ['operation', 'stability'],
  );
  let deprecatedOperations = options.deprecatedOperations ?? [];
  const brownoutActive = options.brownoutActive ?? (() => false);
  gauge(
    'brownout_active',
    'Whether a deprecated operation is browned out (refused until the window ends) at scrape time: 1, else 0.',
    ['operation'],
    function collect() {
      // Reset first: an operation a reload no longer deprecates has no series left behind.
      this.reset();
      for (const operation of deprecatedOperations) this.set({ operation, environment }, brownoutActive(operation) ? 1 : 0);
    },
  );
  const shed = counter('shed_requests_total', 'Requests answered 503 at once because too many were in flight (load shedding).', []);
  const adminConnectionsEvicted = counter(
    'admin_connections_evicted_total',
    'Admin listener connections closed, least progressed first, to admit a newer one at listen.adminMaxConnections.',
    [],
  );
  adminConnectionsEvicted.inc({ environment }, 0);
  const connectionsEvicted = counter(
    'connections_evicted_total',
    "Client connections closed by the gateway: at the listener's connection cap, least progressed first (reason idle, slow_head, stalled_answer), or for an answer the client took no byte of in listen.sendTimeoutMs (send_timeout).",
    ['listener', 'reason'],
  );
  for (const listener of ['listener', 'admin'] as const) for (const reason of CONNECTION_CLOSINGS) connectionsEvicted.inc({ listener, reason, environment }, 0);
  const configReloads = counter(
    'config_reloads_total',
    'Configuration reloads (SIGHUP) by result: success (new requests use it) or failure (refused; the running configuration stays).',
    ['result'],
  );
  const adminActions = counter(
    'admin_actions_total',
    'Changes made through the admin API by action and result (success, refused: 4xx, failed: 5xx); action="authenticate" counts failed and refused authentications.',
    ['action', 'result'],
  );
  // An authentication that succeeds is no event of its own (the change it allows is counted): no series.
  for (const action of ADMIN_ACTIONS)
    for (const result of ADMIN_RESULTS) if (action !== 'authenticate' || result !== 'success') adminActions.inc({ action, result, environment }, 0);
  // As Prometheus's own prometheus_config_last_reload_successful: alerting on it catches a refused
  // reload until a good one, where the counter's increase would fade after its range.
  const lastReloadOk = gauge(
    'config_last_reload_successful',
    'Whether the last configuration reload (SIGHUP) was taken up (1; also before any) or refused (0: the process serves an older configuration than its file).',
    [],
  );
  lastReloadOk.set({ environment }, 1);
  // Absent until the first check: a replica that never reached Redis has not said either way.
  const quotaNearLimit = gauge(
    'quota_consumers_near_limit',
    'API keys that used at least 80% of their quota for the current UTC period (day or month), across replicas, as of the last usage flush.',
    ['period'],
  );
  for (const period of QUOTA_PERIODS) quotaNearLimit.set({ period, environment }, 0);
  const pepperMatches = gauge(
    'pepper_fingerprint_matches',
    "Whether the API keys' pepper fingerprint in Redis matched this gateway's pepper at the last check (1) or not (0: keys are refused 401 or, before verification, the replica is not ready).",
    [],
  );
  // Absent until the first check, like the pepper gauge; the counter is 0 from the start, so its first emptying is an increase.
  const keyStoreKeys = gauge('key_store_keys', 'API keys in the key store (the key id set in Redis) at the last check.', []);
  const keyStoreEmptied = counter(
    'key_store_emptied_total',
    'Times this replica saw the key store emptied after it held keys (Redis restarted without persistence, a flush): every key is then refused 401.',
    [],
  );
  keyStoreEmptied.inc({ environment }, 0);
  const circuitOpen = gauge('upstream_circuit_open', 'Whether the circuit breaker in front of the upstream is open or half-open (1) or closed (0).', []);
  circuitOpen.set({ environment }, 0);
  new Gauge({
    name: name('build_info'),
    help: 'Always 1; the labels say which gateway build runs where.',
    labelNames: ['version', 'environment', 'node_version'] as const,
    registers,
  }).set({ version: options.version, environment, node_version: process.version }, 1);
  const sunset = gauge('operation_sunset_timestamp_seconds', 'When each deprecated operation is removed, as a Unix timestamp.', ['operation']);
  /** The deprecated operations and sunsets of the documents in force (at start, and after each reload). */
  function describeDeprecations(operations: readonly string[], sunsets: MetricsOptions['sunsets']): void {
    deprecatedOperations = operations;
    sunset.reset();
    for (const entry of sunsets) sunset.set({ operation: entry.operation, environment }, entry.sunset.getTime() / 1000);
    for (const operation of operations) {
      for (const reason of ['sunset', 'brownout'] as const) deprecatedRefusals.inc({ operation, reason, environment }, 0);
    }
  }
  describeDeprecations(deprecatedOperations, options.sunsets);

  // Series whose label values are known up front exist from the start at 0: a rate() over them is 0,
  // not empty, and `absent()` or "No data" then means the gateway is not scraped, not that all is well.
  for (const operation of options.operations ?? []) {
    rateLimited.inc({ operation, environment }, 0);
    for (const period of QUOTA_PERIODS) quotaRefusals.inc({ operation, period, environment }, 0);
    for (const kind of UPSTREAM_FAILURE_KINDS) upstreamErrors.inc({ operation, kind, environment }, 0);
    droppedHeaders.inc({ operation, environment }, 0);
    for (const upstream_status of REFUSED_IDENTITY_STATUSES) refusedIdentity.inc({ operation, upstream_status, environment }, 0);
    // Success answers are where drift shows first (a changed Pet); other status classes appear when they occur.
    contractChecks.inc({ operation, status_class: '2xx', environment }, 0);
    for (const kind of CONTRACT_VIOLATION_KINDS) contractViolations.inc({ operation, status_class: '2xx', kind, environment }, 0);
    for (const reason of UNCHECKED_REASONS) contractUnchecked.inc({ operation, reason, environment }, 0);
  }
  for (const { operation, stability } of options.markedOperations ?? []) stabilityRefusals.inc({ operation, stability, environment }, 0);
  for (const reason of AUTH_REFUSAL_REASONS) authRefusals.inc({ reason, environment }, 0);
  for (const reason of KEY_CACHE_CLEAR_REASONS) keyCacheClears.inc({ reason, environment }, 0);
  for (const result of ['hit', 'miss'] as const) keyCache.inc({ result, environment }, 0);
  for (const counter of [rateLimitStoreErrors, rateLimitPassed, shed]) counter.inc({ environment }, 0);
  for (const result of ['success', 'failure'] as const) configReloads.inc({ result, environment }, 0);
  const saturation = createSaturationMetrics({ registers, environment, name, resources: options.resources });
  const tls = createTlsMetrics({ registers, environment, name, tlsListeners: options.tlsListeners ?? [] });

  /** Read from the request tracker and probes when scraped: no per-request gauge updates on the hot path. */
  function readAtScrape(state: ScrapedState): void {
    gauge('in_flight_requests', 'Requests accepted and not yet answered.', [], function collect() {
      this.set({ environment }, state.inFlight());
    });
    gauge('dependency_up', 'Whether a dependency answered its probe at scrape time (1) or not (0): redis, upstream.', ['dependency'], async function collect() {
      const results = await Promise.all(state.dependencies.map(async (dependency) => [dependency.name, await dependency.check().catch(() => false)] as const));
      for (const [dependency, up] of results) this.set({ dependency, environment }, up ? 1 : 0);
    });
    const { clockSkew } = state;
    if (clockSkew !== undefined)
      gauge(
        'redis_clock_skew_seconds',
        "Redis's clock (TIME) minus this replica's, read at scrape time; no sample while Redis does not answer.",
        [],
        async function collect() {
          const skew = await clockSkew();
          if (skew === undefined) this.reset();
          else this.set({ environment }, skew);
        },
      );
    saturation.readPools(state.upstreamPools ?? (() => []));
  }

  // Series are bound once per combination (bound-series.ts) and found by operation, method and status in
  // turn: no key string is made per request, where prom-client would make one on every update.
  const completedSeries = new Map<string, Map<string, Map<number, { count: BoundCounter; duration: ExemplarSeries }>>>();
  const proxiedSeries = new Map<string, { upstream: ExemplarSeries; overhead: ExemplarSeries }>();
  const withExemplars = (histogram: Histogram<string>, labels: LabelValues<string>) =>
    new ExemplarSeries(histogram, labels, LATENCY_BUCKETS, EXEMPLAR_TRACE_LABEL);
  function seriesFor(operation: string, method: string, statusCode: number) {
    let byMethod = completedSeries.get(operation);
    if (byMethod === undefined) {
      byMethod = new Map();
      completedSeries.set(operation, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let series = byStatus.get(statusCode);
    if (series === undefined) {
      const labels = { operation, method, status_code: String(statusCode), environment };
      series = { count: boundCounter(requests, labels), duration: withExemplars(requestDuration, labels) };
      byStatus.set(statusCode, series);
    }
    return series;
  }
  function proxiedFor(operation: string) {
    let series = proxiedSeries.get(operation);
    if (!series) {
      const labels = { operation, environment };
      series = { upstream: withExemplars(upstreamDuration, labels), overhead: withExemplars(overhead, labels) };
      proxiedSeries.set(operation, series);
    }
    return series;
  }

  // Bound per operation, not looked up by label: a backend that adds a header of its own to every answer makes this hot.
  const droppedSeries = new Map<string, BoundCounter>();
  function droppedFor(operation: string): BoundCounter {
    let series = droppedSeries.get(operation);
    if (!series) {
      series = boundCounter(droppedHeaders, { operation, environment });
      droppedSeries.set(operation, series);
    }
    return series;
  }

  const cap = options.deprecatedConsumerCap ?? DEFAULT_DEPRECATED_CONSUMER_CAP;
  const trackedConsumers = new Set<string>();

  const keyCacheHits = boundCounter(keyCache, { result: 'hit', environment });
  const keyCacheMisses = boundCounter(keyCache, { result: 'miss', environment });
  return {
    registry,
    readAtScrape,
    openMetrics: () => renderOpenMetrics(registry),
    requestCompleted(request) {
      // Methods and status codes are bounded by Node's HTTP parser; operations by the document.
      const series = seriesFor(request.operation ?? UNMATCHED_OPERATION, request.method, request.statusCode);
      series.count.inc();
      const { traceId } = request;
      series.duration.observe(request.durationSeconds, traceId);
      if (request.upstreamSeconds !== undefined && request.operation !== undefined) {
        const proxied = proxiedFor(request.operation);
        proxied.upstream.observe(request.upstreamSeconds, traceId);
        proxied.overhead.observe(Math.max(0, request.durationSeconds - request.upstreamSeconds), traceId);
      }
    },
    upstreamFailed: (operation, kind) => upstreamErrors.inc({ operation, kind, environment }),
    upstreamHeadersDropped: (operation, count) => droppedFor(operation).inc(count),
    upstreamConnectionRetired: (reason) => retiredConnections.inc({ reason, environment }),
    upstreamRefusedIdentity: (operation, upstreamStatus) => refusedIdentity.inc({ operation, upstream_status: String(upstreamStatus), environment }),
    upstreamContractChecked(operation, upstreamStatus, verdict) {
      if (verdict.result === 'unchecked') {
        contractUnchecked.inc({ operation, reason: verdict.reason, environment });
        return;
      }
      const status_class = `${Math.trunc(upstreamStatus / 100)}xx`;
      contractChecks.inc({ operation, status_class, environment });
      if (verdict.result === 'violation') contractViolations.inc({ operation, status_class, kind: verdict.violation.kind, environment });
    },
    shadowCompared: (operation, result) => shadowComparisons.inc({ operation, result, environment }),
    shadowDiffered: (operation, kind) => shadowDifferences.inc({ operation, kind, environment }),
    authRefused: (reason) => authRefusals.inc({ reason, environment }),
    // Every authenticated request passes here: its two series are bound once, not looked up by label each time.
    keyCacheLookup: (result) => (result === 'hit' ? keyCacheHits : keyCacheMisses).inc(),
    keyCacheCleared: (reason) => keyCacheClears.inc({ reason, environment }),
    rateLimited: (operation) => rateLimited.inc({ operation, environment }),
    quotaRefused: (operation, period) => quotaRefusals.inc({ operation, period, environment }),
    deprecatedRefused: (operation, reason) => deprecatedRefusals.inc({ operation, reason, environment }),
    stabilityRefused: (operation, stability) => stabilityRefusals.inc({ operation, stability, environment }),
    rateLimitStoreError: () => rateLimitStoreErrors.inc({ environment }),
    rateLimitPassed: () => rateLimitPassed.inc({ environment }),
    shed: () => shed.inc({ environment }),
    connectionClosed: (listener, reason) => {
      connectionsEvicted.inc({ listener, reason, environment });
      // The admin listener's older counter keeps counting what it always counted: evictions at its cap.
      if (listener === 'admin' && reason !== 'send_timeout') adminConnectionsEvicted.inc({ environment });
    },
    deprecationsChanged: describeDeprecations,
    quotaNearLimit: (counts) => {
      for (const period of QUOTA_PERIODS) quotaNearLimit.set({ period, environment }, counts[period]);
    },
    pepperChecked: (matches) => pepperMatches.set({ environment }, matches ? 1 : 0),
    keyStoreChecked: (keys) => keyStoreKeys.set({ environment }, keys),
    keyStoreEmptied: () => keyStoreEmptied.inc({ environment }),
    adminAction: (action, result) => adminActions.inc({ action, result, environment }),
    configReload: (result) => {
      configReloads.inc({ result, environment });
      lastReloadOk.set({ environment }, result === 'success' ? 1 : 0);
    },
    upstreamCircuit: (state) => circuitOpen.set({ environment }, state === 'closed' ? 0 : 1),
    deprecatedCall(operation, keyId, consumer) {
      if (!trackedConsumers.has(keyId) && trackedConsumers.size < cap) trackedConsumers.add(keyId);
      const tracked = trackedConsumers.has(keyId);
      deprecatedRequests.inc({ operation, key_id: tracked ? keyId : 'other', consumer: tracked ? consumer : 'other', environment });
    },
    redisCommand: saturation.redisCommand,
    tls,
  };
}
