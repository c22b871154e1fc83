// Bound series update prom-client's values in place; prom-client's own API is the oracle: any sequence
// of updates, resets and removals exposes the same text through either.
import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { boundCounter, boundHistogram } from '../../../src/forks/bound-series.ts';
import { renderOpenMetrics } from '../../../src/observability/open-metrics.ts';

const BUCKETS = [0.0005, 0.001, 0.01, 0.1, 1];
const SERIES = [
  { operation: 'listPets', environment: 'production' },
  { operation: 'getPet', environment: 'production' },
  { operation: 'createPet', environment: 'staging' },
];

function metricsIn(registry: Registry) {
  // Label names as the gateway's series are typed where ExemplarSeries takes them: any string.
  const labelNames: string[] = ['operation', 'environment'];
  const metrics = {
    counter: new Counter({ name: 'requests_total', help: 'h', labelNames, registers: [] }),
    histogram: new Histogram({ name: 'duration_seconds', help: 'h', labelNames, buckets: BUCKETS, registers: [] }),
    // As the gateway's latency histograms: exemplars kept, registered on its one (Prometheus-format) registry.
    exemplars: new Histogram({ name: 'upstream_seconds', help: 'h', labelNames, buckets: BUCKETS, enableExemplars: true, registers: [] }),
  };
  for (const metric of Object.values(metrics)) registry.registerMetric(metric);
  return metrics;
}

type Update =
  | { kind: 'inc'; series: number; value: number | undefined }
  | { kind: 'observe'; series: number; value: number; exemplars: boolean }
  | { kind: 'exemplar'; series: number; value: number }
  | { kind: 'reset' }
  | { kind: 'remove'; series: number };

const series = fc.integer({ min: 0, max: SERIES.length - 1 });
const observed = fc.oneof(fc.constantFrom(...BUCKETS, 0, 5, 1e-7, -1, Number.NaN, Number.POSITIVE_INFINITY), fc.double({ min: -1, max: 20, noNaN: true }));
const update: fc.Arbitrary<Update> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('inc' as const),
      series,
      value: fc.option(fc.oneof(fc.nat(5), fc.double({ min: -1, max: 5 })), { nil: undefined }),
    }),
  },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('observe' as const), series, value: observed, exemplars: fc.boolean() }) },
  // A sampled request's observation through prom-client's own API, as ExemplarSeries makes it now and then.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('exemplar' as const), series, value: fc.double({ min: 0, max: 20, noNaN: true }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), series }) },
);

/** The error an update threw, or undefined. */
function outcome(apply: () => void): string | undefined {
  try {
    apply();
    return undefined;
  } catch (error) {
    return String(error);
  }
}

describe('bound series', () => {
  it('expose what prom-client exposes for the same updates, resets and removals, and refuse what it refuses', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(update, { maxLength: 60 }), fc.boolean(), async (updates, zeroedFirst) => {
        const boundRegistry = new Registry();
        const oracleRegistry = new Registry();
        const bound = metricsIn(boundRegistry);
        const oracle = metricsIn(oracleRegistry);
        // As the gateway makes some series exist at 0 before any update.
        if (zeroedFirst) for (const metrics of [bound, oracle]) metrics.counter.inc({ ...SERIES[0]! }, 0);
        const counters = SERIES.map((labels) => boundCounter(bound.counter, labels));
        const histograms = SERIES.map((labels) => boundHistogram(bound.histogram, labels));
        const exemplarHistograms = SERIES.map((labels) => boundHistogram(bound.exemplars, labels));
        for (const step of updates) {
          if (step.kind === 'inc') {
            const labels = SERIES[step.series]!;
            const mine = outcome(() => counters[step.series]!.inc(step.value));
            const theirs = outcome(() => (step.value === undefined ? oracle.counter.inc({ ...labels }) : oracle.counter.inc({ ...labels }, step.value)));
            expect(mine).toBe(theirs);
          } else if (step.kind === 'observe') {
            const labels = SERIES[step.series]!;
            const [mine, theirs] = step.exemplars
              ? [exemplarHistograms[step.series]!, oracle.exemplars.labels({ ...labels })]
              : [histograms[step.series]!, oracle.histogram.labels({ ...labels })];
            expect(outcome(() => mine.observe(step.value))).toBe(outcome(() => theirs.observe(step.value)));
          } else if (step.kind === 'exemplar') {
            for (const metrics of [bound, oracle])
              metrics.exemplars.observe({ labels: { ...SERIES[step.series]! }, value: step.value, exemplarLabels: { trace_id: 'a'.repeat(32) } });
          } else if (step.kind === 'reset') {
            for (const metrics of [bound, oracle]) for (const metric of Object.values(metrics)) metric.reset();
          } else {
            for (const metrics of [bound, oracle]) for (const metric of Object.values(metrics)) metric.remove({ ...SERIES[step.series]! });
          }
        }
        expect(await boundRegistry.metrics()).toBe(await oracleRegistry.metrics());
        // The OpenMetrics exposition too, exemplars included (each is stamped with the time it was taken).
        const unstamped = (text: string) => text.replace(/^(.* # \{[^}]*\} \S+) \S+$/gm, '$1');
        expect(unstamped(await renderOpenMetrics(boundRegistry))).toBe(unstamped(await renderOpenMetrics(oracleRegistry)));
      }),
      { numRuns: 300 },
    );
  });

  // A prom-client that keeps its values otherwise sends every update through its own API, silently: the
  // oracle above still passes then, so these fail instead.
  it.each(['counter', 'histogram', 'exemplars'] as const)('update a %s in place past the first update (engaged)', (kind) => {
    const metric = metricsIn(new Registry())[kind];
    const series = kind === 'counter' ? boundCounter(metric as Counter<string>, SERIES[0]!) : boundHistogram(metric as Histogram<string>, SERIES[0]!);
    expect(series.engaged()).toBe(false);
    if ('inc' in series) series.inc();
    else series.observe(0.01);
    expect(series.engaged()).toBe(true);
  });

  it("never call prom-client's own update past a counter's first", () => {
    const { counter } = metricsIn(new Registry());
    // prom-client sets `inc` on each counter it makes; a series bound later calls this one.
    const inc = vi.spyOn(counter, 'inc');
    const series = boundCounter(counter, SERIES[0]!);
    for (let n = 0; n < 5; n++) series.inc();
    expect(inc).toHaveBeenCalledTimes(1);
  });

  it.each(['histogram', 'exemplars'] as const)("never call prom-client's own observe past a %s's first", (kind) => {
    const histogram = metricsIn(new Registry())[kind];
    let ownObserves = 0;
    const labels = histogram.labels.bind(histogram);
    // The child prom-client hands out, its observe counted: the bound series' way back to prom-client's own update.
    vi.spyOn(histogram, 'labels').mockImplementation((...args: Parameters<typeof labels>) => {
      const child = labels(...args);
      return {
        ...child,
        observe: (value: number) => {
          ownObserves += 1;
          child.observe(value);
        },
      };
    });
    const series = boundHistogram(histogram, SERIES[0]!);
    for (const value of [0.0004, 0.01, 0.5, 3, 0.01]) series.observe(value);
    expect(ownObserves).toBe(1);
  });

  it("counts a series' updates past its first in prom-client's own values", async () => {
    const registry = new Registry();
    const { histogram } = metricsIn(registry);
    const series = boundHistogram(histogram, SERIES[0]!);
    for (const value of [0.0004, 0.0005, 0.05, 3]) series.observe(value);
    expect(await registry.metrics()).toContain(
      [
        'duration_seconds_bucket{le="0.0005",operation="listPets",environment="production"} 2',
        'duration_seconds_bucket{le="0.001",operation="listPets",environment="production"} 2',
        'duration_seconds_bucket{le="0.01",operation="listPets",environment="production"} 2',
        'duration_seconds_bucket{le="0.1",operation="listPets",environment="production"} 3',
        'duration_seconds_bucket{le="1",operation="listPets",environment="production"} 3',
        'duration_seconds_bucket{le="+Inf",operation="listPets",environment="production"} 4',
        'duration_seconds_sum{operation="listPets",environment="production"} 3.0509',
        'duration_seconds_count{operation="listPets",environment="production"} 4',
      ].join('\n'),
    );
  });
});
