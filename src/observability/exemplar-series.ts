// One latency histogram series that carries exemplars: a sampled observation refreshes its bucket's exemplar at most once a second.
import type { Histogram, LabelValues } from 'prom-client';
import { boundHistogram, type BoundHistogram } from '../forks/bound-series.ts';

/** How long a bucket keeps its exemplar before a sampled observation replaces it. */
export const EXEMPLAR_REFRESH_MS = 1000;

/**
 * A scrape reads one exemplar per bucket, and prom-client's exemplar path hashes and validates labels on every call:
 * only a bucket's first sampled observation each second takes it (so rarely hit, slow buckets always do), the rest
 * go through the bound child as unsampled requests do.
 */
export class ExemplarSeries {
  private readonly refreshedAt: Float64Array;
  private readonly histogram: Histogram<string>;
  private readonly labels: LabelValues<string>;
  private readonly child: BoundHistogram;
  private readonly bounds: readonly number[];
  private readonly traceLabel: string;

  constructor(histogram: Histogram<string>, labels: LabelValues<string>, bounds: readonly number[], traceLabel: string) {
    this.histogram = histogram;
    this.labels = labels;
    this.child = boundHistogram(histogram, labels);
    this.bounds = bounds;
    this.traceLabel = traceLabel;
    this.refreshedAt = new Float64Array(bounds.length + 1).fill(Number.NEGATIVE_INFINITY);
  }

  /** Observes `value`; with `traceId` (a sampled request), as its bucket's exemplar when that one is due. */
  observe(value: number, traceId: string | undefined, now?: number): void {
    // The clock is read only for a sampled observation: an unsampled one (every request, tracing off) is the child's observe alone.
    if (traceId === undefined || !this.exemplarDue(value, now ?? performance.now())) {
      this.child.observe(value);
      return;
    }
    this.histogram.observe({ labels: this.labels, value, exemplarLabels: { [this.traceLabel]: traceId } });
  }

  private exemplarDue(value: number, now: number): boolean {
    let bucket = 0;
    while (bucket < this.bounds.length && value > this.bounds[bucket]!) bucket++;
    if (now - this.refreshedAt[bucket]! < EXEMPLAR_REFRESH_MS) return false;
    this.refreshedAt[bucket] = now;
    return true;
  }
}
