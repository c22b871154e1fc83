// Exemplars of a latency series: a sampled observation takes its bucket's exemplar once a second, every observation is counted.
import { Histogram } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { EXEMPLAR_REFRESH_MS, ExemplarSeries } from '../../../src/observability/exemplar-series.ts';

const BOUNDS = [0.001, 0.01, 0.1];
const LABELS = { operation: 'listPets' };

function series() {
  const histogram = new Histogram({
    name: 'latency_seconds',
    help: 'h',
    labelNames: ['operation'],
    buckets: BOUNDS,
    enableExemplars: true,
    registers: [],
  });
  return { histogram, latency: new ExemplarSeries(histogram, LABELS, BOUNDS, 'trace_id') };
}

/** The exemplar's trace id of each bucket that has one, by upper bound. */
async function exemplars(histogram: Histogram<string>): Promise<Record<string, string>> {
  const { values } = await histogram.get();
  const found: Record<string, string> = {};
  for (const value of values) {
    const exemplar = (value as { exemplar?: { labelSet: Record<string, string> } | null }).exemplar;
    if (exemplar) found[String(value.labels.le)] = exemplar.labelSet.trace_id!;
  }
  return found;
}

async function count(histogram: Histogram<string>): Promise<number> {
  return (await histogram.get()).values.find((value) => value.metricName === 'latency_seconds_count')!.value;
}

describe('ExemplarSeries', () => {
  it("gives a bucket the first sampled observation's trace id", async () => {
    const { histogram, latency } = series();
    latency.observe(0.005, 'a'.repeat(32), 1000);
    expect(await exemplars(histogram)).toEqual({ '0.01': 'a'.repeat(32) });
  });

  it("keeps a bucket's exemplar for a second, counting the observations after it", async () => {
    const { histogram, latency } = series();
    latency.observe(0.005, 'a'.repeat(32), 1000);
    latency.observe(0.006, 'b'.repeat(32), 1000 + EXEMPLAR_REFRESH_MS - 1);
    expect(await exemplars(histogram)).toEqual({ '0.01': 'a'.repeat(32) });
    expect(await count(histogram)).toBe(2);
  });

  it('replaces it with the next sampled observation a second later', async () => {
    const { histogram, latency } = series();
    latency.observe(0.005, 'a'.repeat(32), 1000);
    latency.observe(0.006, 'b'.repeat(32), 1000 + EXEMPLAR_REFRESH_MS);
    expect(await exemplars(histogram)).toEqual({ '0.01': 'b'.repeat(32) });
  });

  it('refreshes each bucket on its own: a slow request gets its exemplar beside a busy fast bucket', async () => {
    const { histogram, latency } = series();
    latency.observe(0.005, 'a'.repeat(32), 1000);
    latency.observe(0.5, 'c'.repeat(32), 1001);
    expect(await exemplars(histogram)).toEqual({ '0.01': 'a'.repeat(32), '+Inf': 'c'.repeat(32) });
  });

  it('takes no exemplar from an unsampled observation', async () => {
    const { histogram, latency } = series();
    latency.observe(0.005, undefined, 1000);
    expect(await exemplars(histogram)).toEqual({});
    expect(await count(histogram)).toBe(1);
  });
});
