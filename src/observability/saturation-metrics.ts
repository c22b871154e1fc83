// How close the gateway is to a limit: the pod's CPU request and memory limit, Redis command latency and errors, the upstream pools' use.
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import type { UpstreamPoolStats } from '../proxy/exchange.ts';
import { REDIS_COMMAND_KINDS, type RedisCommandKind, type RedisCommandObserver } from '../redis/command-timing.ts';
import { boundCounter, boundHistogram } from '../forks/bound-series.ts';

/** From 0.1 ms (a local Redis) to the command timeout's order (redis.commandTimeoutMs, 500 ms by default) and past it. */
export const REDIS_LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

/** What the pod gave this container (Downward API); `null` where not told, and then the gauge has no series. */
export interface PodResources {
  cpuRequestCores: number | null;
  memoryLimitBytes: number | null;
}

/** One version's upstream pools at scrape time: every generation's still open, added up. */
export interface UpstreamPoolReading {
  /** The version's base path (`/v1`): one pool per version, each to its own backend. */
  basePath: string;
  stats: UpstreamPoolStats;
  /** The running configuration's `upstream.maxSockets`. */
  maxConnections: number;
}

export interface SaturationMetricsOptions {
  registers: Registry[];
  environment: string;
  name: (suffix: string) => string;
  resources: PodResources | undefined;
}

export interface SaturationMetrics {
  /** The observer of one kind of Redis command, its series bound once: call it once per command. */
  redisCommand(kind: RedisCommandKind): RedisCommandObserver;
  /** Registers the pool gauges, read from `read` at every scrape. */
  readPools(read: () => readonly UpstreamPoolReading[]): void;
}

export function createSaturationMetrics({ registers, environment, name, resources }: SaturationMetricsOptions): SaturationMetrics {
  const cpuRequest = new Gauge({
    name: name('resource_cpu_request_cores'),
    help: "The CPU this container requested, in cores (GATEWAY_CPU_REQUEST_MILLICORES, from the pod's resources.requests.cpu): what the autoscaler's utilisation is a share of. No series when not set.",
    labelNames: ['environment'] as const,
    registers,
  });
  const memoryLimit = new Gauge({
    name: name('resource_memory_limit_bytes'),
    help: "The memory limit of this container, in bytes (GATEWAY_MEMORY_LIMIT_BYTES, from the pod's resources.limits.memory): past it the container is killed. No series when not set.",
    labelNames: ['environment'] as const,
    registers,
  });
  if (resources?.cpuRequestCores != null) cpuRequest.set({ environment }, resources.cpuRequestCores);
  if (resources?.memoryLimitBytes != null) memoryLimit.set({ environment }, resources.memoryLimitBytes);

  const redisDuration = new Histogram({
    name: name('redis_command_duration_seconds'),
    help: `Time from sending a Redis command to its reply or failure, failed ones included, by what it did: ${REDIS_COMMAND_KINDS.join(', ')}.`,
    labelNames: ['command', 'environment'] as const,
    buckets: REDIS_LATENCY_BUCKETS,
    registers,
  });
  const redisErrors = new Counter({
    name: name('redis_errors_total'),
    help: `Redis commands that failed (refused, timed out, or sent while disconnected), by what they did: ${REDIS_COMMAND_KINDS.join(', ')}.`,
    labelNames: ['command', 'environment'] as const,
    registers,
  });
  const observers = new Map<RedisCommandKind, RedisCommandObserver>();
  for (const command of REDIS_COMMAND_KINDS) {
    const labels = { command, environment };
    // Every kind's series exist from the start: a latency panel reads an empty histogram, an error rate 0.
    redisDuration.zero(labels);
    redisErrors.inc(labels, 0);
    const duration = boundHistogram(redisDuration, labels);
    const errors = boundCounter(redisErrors, labels);
    observers.set(command, (seconds, failed) => {
      duration.observe(seconds);
      if (failed) errors.inc();
    });
  }

  function readPools(read: () => readonly UpstreamPoolReading[]): void {
    // Each gauge reads the pools itself (a few counters per pool): no gauge depends on the order prom-client collects them in.
    new Gauge({
      name: name('upstream_pool_connections'),
      help: "Connections open to each version's backend by state: busy (carrying a request) or free (idle, kept alive).",
      labelNames: ['base_path', 'state', 'environment'] as const,
      registers,
      collect() {
        this.reset();
        for (const { basePath: base_path, stats } of read()) {
          this.set({ base_path, state: 'busy', environment }, stats.connected - stats.free);
          this.set({ base_path, state: 'free', environment }, stats.free);
        }
      },
    });
    new Gauge({
      name: name('upstream_pool_requests'),
      help: "Requests in each version's upstream pool by state: running (sent on a connection) or queued (waiting for one: the pool is full).",
      labelNames: ['base_path', 'state', 'environment'] as const,
      registers,
      collect() {
        this.reset();
        for (const { basePath: base_path, stats } of read()) {
          this.set({ base_path, state: 'running', environment }, stats.running);
          this.set({ base_path, state: 'queued', environment }, stats.queued);
        }
      },
    });
    new Gauge({
      name: name('upstream_pool_max_connections'),
      help: "The most connections each version's upstream pool opens (upstream.maxSockets); further requests queue.",
      labelNames: ['base_path', 'environment'] as const,
      registers,
      collect() {
        this.reset();
        for (const { basePath: base_path, maxConnections } of read()) this.set({ base_path, environment }, maxConnections);
      },
    });
  }

  return { redisCommand: (kind) => observers.get(kind)!, readPools };
}
