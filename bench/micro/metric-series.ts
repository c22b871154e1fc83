// node bench/micro/metric-series.ts: one request's metric updates (a counter, three latency histograms, the
// key-cache counter and the Redis command histogram, as src/observability/metrics.ts makes them) through
// prom-client's label children, against the same updates through bound series (src/forks/bound-series.ts).
// Decision record 0010. Run it pinned: taskset -c 0 node bench/micro/metric-series.ts
import { Counter, Histogram, Registry } from 'prom-client';
import { boundCounter, boundHistogram } from '../../src/forks/bound-series.ts';
import { LATENCY_BUCKETS } from '../../src/observability/metrics.ts';

const ROUNDS = Math.max(3, Number(process.env.MICRO_ROUNDS ?? 7));
const REQUESTS = 500_000;

interface Updates {
  count: { inc(): void };
  latencies: Array<{ observe(value: number): void }>;
  keyCache: { inc(): void };
  redis: { observe(value: number): void };
}

function metrics(): { counter: Counter<string>; histograms: Histogram<string>[]; keyCache: Counter<string>; redis: Histogram<string> } {
  const registry = new Registry();
  const labelNames = ['operation', 'method', 'status_code', 'environment'];
  return {
    counter: new Counter({ name: 'requests_total', help: 'h', labelNames, registers: [registry] }),
    // Exemplars kept, as the gateway's latency histograms keep them (registered by hand on a Prometheus-format registry, as metrics.ts does).
    histograms: ['a', 'b', 'c'].map((name) => {
      const histogram = new Histogram({ name: `${name}_seconds`, help: 'h', labelNames, buckets: LATENCY_BUCKETS, enableExemplars: true, registers: [] });
      registry.registerMetric(histogram);
      return histogram;
    }),
    keyCache: new Counter({ name: 'key_cache_total', help: 'h', labelNames: ['result', 'environment'], registers: [registry] }),
    redis: new Histogram({
      name: 'redis_seconds',
      help: 'h',
      labelNames: ['command', 'environment'],
      buckets: [0.0001, 0.001, 0.01, 0.1],
      registers: [registry],
    }),
  };
}

const labels = { operation: 'listPets', method: 'GET', status_code: '200', environment: 'production' };
const cacheLabels = { result: 'hit', environment: 'production' };
const redisLabels = { command: 'rate_limit_increment', environment: 'production' };

function viaChildren(): Updates {
  const m = metrics();
  return {
    count: m.counter.labels(labels),
    latencies: m.histograms.map((histogram) => histogram.labels(labels)),
    keyCache: m.keyCache.labels(cacheLabels),
    redis: m.redis.labels(redisLabels),
  };
}

function viaBound(): Updates {
  const m = metrics();
  return {
    count: boundCounter(m.counter, labels),
    latencies: m.histograms.map((histogram) => boundHistogram(histogram, labels)),
    keyCache: boundCounter(m.keyCache, cacheLabels),
    redis: boundHistogram(m.redis, redisLabels),
  };
}

function run(updates: Updates): number {
  const started = process.hrtime.bigint();
  for (let request = 0; request < REQUESTS; request++) {
    // Durations as the gateway rounds them: a few thousand recurring values.
    const seconds = (request % 4000) / 1_000_000;
    updates.count.inc();
    for (const latency of updates.latencies) latency.observe(seconds);
    updates.keyCache.inc();
    updates.redis.observe(seconds / 10);
  }
  return Number(process.hrtime.bigint() - started) / REQUESTS;
}

const variants = [
  { name: "prom-client's label children", make: viaChildren, runs: [] as number[] },
  { name: 'bound series (the gateway)', make: viaBound, runs: [] as number[] },
];
for (let round = 0; round < ROUNDS; round++) for (const variant of variants) variant.runs.push(run(variant.make()));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const variant of variants) process.stdout.write(`${variant.name.padEnd(32)} ${median(variant.runs).toFixed(0)} ns a request (six updates)\n`);
