// How a key's quotas decide a batch of its requests: which of them a quota admits, refuses, or leaves to the rate limit.
import type { Consumer } from '../auth/key-store.ts';
import { type PeriodSpan, periodAt, QUOTA_PERIODS, type QuotaPeriod, type QuotaReading, type QuotaUse } from './quota-periods.ts';

/** What a store needs to count a request against its key's quotas, beside the per-window hit it always counts. */
export interface QuotaSpec {
  keyId: string;
  /** The request's per-window limit: a request over it is the rate limit's refusal and uses no quota. */
  windowLimit: number;
  perDay?: number;
  perMonth?: number;
}

/**
 * The caller's quotas as a spec, or undefined when its key has none: the request path then does nothing more than
 * before (`windowLimit` is asked only of a key with quotas).
 */
export function quotaSpecOf(caller: Consumer, windowLimit: () => number): QuotaSpec | undefined {
  const { quotaPerDay, quotaPerMonth } = caller;
  if (quotaPerDay === undefined && quotaPerMonth === undefined) return undefined;
  return {
    keyId: caller.keyId,
    windowLimit: windowLimit(),
    ...(quotaPerDay === undefined ? {} : { perDay: quotaPerDay }),
    ...(quotaPerMonth === undefined ? {} : { perMonth: quotaPerMonth }),
  };
}

/** One quota of a spec in the period holding `now`. */
export interface QuotaCounter {
  period: QuotaPeriod;
  limit: number;
  /** The period's name in counter keys (`2026-11-26`, `2026-11`). */
  name: string;
  endsAt: number;
}

/** Each spec's counters, made once a day: a key's spec is kept while its quotas stay (QuotaDesk), so most requests find them here. */
const countersOfSpec = new WeakMap<QuotaSpec, { day: PeriodSpan; counters: QuotaCounter[] }>();

/** The spec's quotas at `now`, day first. */
export function quotaCounters(spec: QuotaSpec, now: number): QuotaCounter[] {
  const day = periodAt('day', now);
  const known = countersOfSpec.get(spec);
  if (known !== undefined && known.day === day) return known.counters;
  const counters = countersAt(spec, now);
  countersOfSpec.set(spec, { day, counters });
  return counters;
}

function countersAt(spec: QuotaSpec, now: number): QuotaCounter[] {
  const counters: QuotaCounter[] = [];
  for (const period of QUOTA_PERIODS) {
    const limit = period === 'day' ? spec.perDay : spec.perMonth;
    if (limit === undefined) continue;
    const { name, endsAt } = periodAt(period, now);
    counters.push({ period, limit, name, endsAt });
  }
  return counters;
}

/** A quota counter's Redis key: the key id as the hash tag, so a store may count it in one script with the key's window counter. */
export function quotaCounterKey(prefix: string, keyId: string, counter: Pick<QuotaCounter, 'period' | 'name'>): string {
  return `${prefix}{${keyId}}:${counter.period}:${counter.name}`;
}

/**
 * How many of `hits` requests, in order, the quotas admit: those within the window's limit (`windowTotal` counts the
 * batch), while every quota has room (`usedBefore`, by counter, is what the period had before the batch).
 */
export function admittedOf(hits: number, windowTotal: number, windowLimit: number, counters: readonly QuotaCounter[], usedBefore: readonly number[]): number {
  let admitted = Math.min(hits, Math.max(0, windowLimit - (windowTotal - hits)));
  for (const [index, counter] of counters.entries()) admitted = Math.min(admitted, Math.max(0, counter.limit - usedBefore[index]!));
  return admitted;
}

/**
 * The reading of the batch's request at `position` (0 first): an admitted one counts itself in `used`; one the quotas
 * refuse names the period whose end it must wait for (the month when both are used up: the day's end would not do).
 * One over the window's limit is the rate limit's refusal: its reading shows the quotas as they stand.
 */
export function readingAt(
  position: number,
  admitted: number,
  withinWindow: boolean,
  counters: readonly QuotaCounter[],
  usedBefore: readonly number[],
): QuotaReading {
  const reading: QuotaReading = {};
  const isAdmitted = position < admitted;
  for (const [index, counter] of counters.entries()) {
    const use: QuotaUse = { limit: counter.limit, used: usedBefore[index]! + (isAdmitted ? position + 1 : admitted), endsAt: counter.endsAt };
    reading[counter.period] = use;
    if (!isAdmitted && withinWindow && use.used >= use.limit) reading.refused = counter.period;
  }
  return reading;
}
