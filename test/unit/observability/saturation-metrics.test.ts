// The saturation metrics: the pod's resources when told them, Redis command latency and errors from 0, the upstream pools read at scrape.
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/observability/metrics.ts';
import type { UpstreamPoolReading } from '../../../src/observability/saturation-metrics.ts';
import { REDIS_COMMAND_KINDS } from '../../../src/redis/command-timing.ts';
import { parseExposition, seriesKey } from '../../helpers/exposition.ts';

const environment = 'production';
const metric = (suffix: string, labels: Record<string, string> = {}) => seriesKey(`petstore_gateway_${suffix}`, { ...labels, environment });
const fresh = (resources?: { cpuRequestCores: number | null; memoryLimitBytes: number | null }) =>
  createMetrics({ environment, version: 't', sunsets: [], processMetrics: false, ...(resources ? { resources } : {}) });

describe('the pod resources', () => {
  it('export the CPU request in cores and the memory limit in bytes when told them', async () => {
    const series = parseExposition(await fresh({ cpuRequestCores: 0.5, memoryLimitBytes: 536_870_912 }).registry.metrics());
    expect(series.get(metric('resource_cpu_request_cores'))).toBe(0.5);
    expect(series.get(metric('resource_memory_limit_bytes'))).toBe(536_870_912);
  });

  it('have no series when not told (outside Kubernetes), rather than a made-up 0', async () => {
    for (const resources of [undefined, { cpuRequestCores: null, memoryLimitBytes: null }]) {
      const keys = [...parseExposition(await fresh(resources).registry.metrics()).keys()];
      expect(keys.filter((key) => key.startsWith('petstore_gateway_resource_'))).toEqual([]);
    }
  });
});

describe('Redis commands', () => {
  it.each(REDIS_COMMAND_KINDS)('%s: latency and errors exist from the start, at 0', async (command) => {
    const series = parseExposition(await fresh().registry.metrics());
    expect(series.get(metric('redis_command_duration_seconds_count', { command }))).toBe(0);
    expect(series.get(metric('redis_command_duration_seconds_bucket', { command, le: '+Inf' }))).toBe(0);
    expect(series.get(metric('redis_errors_total', { command }))).toBe(0);
  });

  it('time every command of its kind, failed ones too, and count the failures', async () => {
    const metrics = fresh();
    const lookup = metrics.redisCommand('key_lookup');
    lookup(0.0004, false);
    lookup(0.5, true);
    const series = parseExposition(await metrics.registry.metrics());
    expect(series.get(metric('redis_command_duration_seconds_count', { command: 'key_lookup' }))).toBe(2);
    expect(series.get(metric('redis_command_duration_seconds_bucket', { command: 'key_lookup', le: '0.0005' }))).toBe(1);
    expect(series.get(metric('redis_command_duration_seconds_sum', { command: 'key_lookup' }))).toBeCloseTo(0.5004);
    expect(series.get(metric('redis_errors_total', { command: 'key_lookup' }))).toBe(1);
    expect(series.get(metric('redis_errors_total', { command: 'report_flush' }))).toBe(0);
  });
});

describe('the upstream pools', () => {
  it('are read when scraped, per version: connections busy and free, requests running and queued, and the most allowed', async () => {
    const metrics = fresh();
    let readings: UpstreamPoolReading[] = [
      { basePath: '/v1', stats: { connected: 5, free: 2, running: 3, queued: 0 }, maxConnections: 256 },
      { basePath: '/v2', stats: { connected: 1, free: 1, running: 0, queued: 0 }, maxConnections: 256 },
    ];
    metrics.readAtScrape({ inFlight: () => 0, dependencies: [], upstreamPools: () => readings });
    const first = parseExposition(await metrics.registry.metrics());
    expect(first.get(metric('upstream_pool_connections', { base_path: '/v1', state: 'busy' }))).toBe(3);
    expect(first.get(metric('upstream_pool_connections', { base_path: '/v1', state: 'free' }))).toBe(2);
    expect(first.get(metric('upstream_pool_requests', { base_path: '/v1', state: 'running' }))).toBe(3);
    expect(first.get(metric('upstream_pool_requests', { base_path: '/v1', state: 'queued' }))).toBe(0);
    expect(first.get(metric('upstream_pool_max_connections', { base_path: '/v2' }))).toBe(256);

    readings = [{ basePath: '/v1', stats: { connected: 4, free: 0, running: 4, queued: 7 }, maxConnections: 4 }];
    const second = parseExposition(await metrics.registry.metrics());
    expect(second.get(metric('upstream_pool_requests', { base_path: '/v1', state: 'queued' }))).toBe(7);
    expect(second.get(metric('upstream_pool_max_connections', { base_path: '/v1' }))).toBe(4);
    expect([...second.keys()].filter((key) => key.includes('base_path="/v2"'))).toEqual([]);
  });
});
