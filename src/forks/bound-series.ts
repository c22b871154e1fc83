// A series of a prom-client counter or histogram bound once, updated in place on the request path
// (decision 0010). prom-client stays the registry and the exposition; only the update is the gateway's.
// The one module that reads prom-client's internals (`hashMap`, a histogram's `upperBounds`): relies on
// prom-client 15.1.3 exactly (package.json pins it; its next major renames hashMap). Oracle and engaged
// tests: test/unit/forks/bound-series.test.ts.
import type { Counter, Histogram, LabelValues } from 'prom-client';

/**
 * What prom-client 15 keeps per series in `hashMap`: a counter's `{ labels, value }`, a histogram's `{ labels,
 * bucketValues, sum, count }` keyed by bound (lib/counter.js, lib/histogram.js). bound-series.test.ts holds these
 * to the public API's exposition, so a prom-client that keeps them otherwise fails there, not in production.
 */
interface SeriesValues {
  labels: LabelValues<string>;
}
interface CounterValues extends SeriesValues {
  value: number;
}
interface HistogramValues extends SeriesValues {
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}
interface MetricInternals<Values> {
  hashMap: Record<string, Values>;
}
interface HistogramInternals {
  upperBounds: readonly number[];
}

function sameLabels(kept: LabelValues<string>, wanted: LabelValues<string>): boolean {
  const names = Object.keys(wanted);
  return Object.keys(kept).length === names.length && names.every((name) => kept[name] === wanted[name]);
}

/** The series' values once prom-client's public API made them, found again after a `reset()` or `remove()`. */
class SeriesSlot<Values extends SeriesValues> {
  private readonly metric: MetricInternals<Values>;
  private readonly labels: LabelValues<string>;
  private hash = '';
  private values: Values | undefined;

  constructor(metric: object, labels: LabelValues<string>) {
    // prom-client declares no hashMap; its shape is pinned by the test named above.
    this.metric = metric as MetricInternals<Values>;
    this.labels = labels;
  }

  /** The values in force, or undefined when prom-client holds none for these labels (yet, or any more). */
  current(): Values | undefined {
    const values = this.values;
    if (values !== undefined && this.metric.hashMap[this.hash] === values) return values;
    this.values = undefined;
    const hashMap = this.metric.hashMap;
    for (const hash in hashMap) {
      const candidate = hashMap[hash]!;
      if (sameLabels(candidate.labels, this.labels)) {
        this.hash = hash;
        this.values = candidate;
        return candidate;
      }
    }
    return undefined;
  }
}

/** Whether updates now land in prom-client's values in place; false before the first, or if prom-client keeps them otherwise (each update then goes through its API). */
interface Engaged {
  engaged(): boolean;
}

export interface BoundCounter extends Engaged {
  inc(value?: number): void;
}

export interface BoundHistogram extends Engaged {
  observe(value: number): void;
}

/** `counter.labels(labels)` adding in place: prom-client's own makes the key and checks the labels on every call. */
export function boundCounter(counter: Counter<string>, labels: LabelValues<string>): BoundCounter {
  const child = counter.labels(labels);
  const slot = new SeriesSlot<CounterValues>(counter, labels);
  return {
    inc(value = 1) {
      const values = value >= 0 && value !== Number.POSITIVE_INFINITY ? slot.current() : undefined;
      // The first update of the series, or a value prom-client refuses (its error is the one thrown).
      if (values === undefined) child.inc(value);
      else values.value += value;
    },
    engaged: () => slot.current() !== undefined,
  };
}

/** `histogram.labels(labels)` counting in place: prom-client's own also turns the bound into a property name each call. */
export function boundHistogram(histogram: Histogram<string>, labels: LabelValues<string>): BoundHistogram {
  const child = histogram.labels(labels);
  const slot = new SeriesSlot<HistogramValues>(histogram, labels);
  // The histogram's buckets as prom-client keeps them (undeclared, pinned by the same test).
  const { upperBounds } = histogram as unknown as HistogramInternals;
  // The property names prom-client gives the buckets: String(bound), as its object literal does.
  const bucketNames = upperBounds.map(String);
  return {
    observe(value) {
      const values = Number.isFinite(value) ? slot.current() : undefined;
      if (values === undefined) {
        child.observe(value);
        return;
      }
      values.sum += value;
      values.count += 1;
      // The first bound at or above the value; above the last, only the count (the +Inf bucket) grows.
      for (let bucket = 0; bucket < upperBounds.length; bucket++) {
        if (value <= upperBounds[bucket]!) {
          values.bucketValues[bucketNames[bucket]!]! += 1;
          return;
        }
      }
    },
    engaged: () => slot.current() !== undefined && upperBounds.every((bound) => bound in slot.current()!.bucketValues),
  };
}
