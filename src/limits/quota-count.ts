// How a key's quotas decide a batch of its requests: which of them a quota admits, refuses, or leaves to the rate limit.
import type { LimitPolicy } from './limit-store.ts';
import { type PeriodSpan, periodAt, QUOTA_PERIODS, type QuotaPeriod, type QuotaReading, type QuotaUse } from './quota-periods.ts';

/** One quota of a policy in the period holding `now`. */
export interface QuotaCounter {
  period: QuotaPeriod;
  limit: number;
  /** The period's name in counter keys (`2026-11-26`, `2026-11`). */
  name: string;
  endsAt: number;
}

/** Each policy's counters, made once a day: the limiter keeps a key's policy while its limits stay, so most requests find them here. */
const countersOfPolicy = new WeakMap<LimitPolicy, { day: PeriodSpan; counters: QuotaCounter[] }>();

/** The policy's quotas at `now`, day first. */
export function quotaCounters(policy: LimitPolicy, now: number): QuotaCounter[] {
  const day = periodAt('day', now);
  const known = countersOfPolicy.get(policy);
  if (known !== undefined && known.day === day) return known.counters;
  const counters = countersAt(policy, now);
  countersOfPolicy.set(policy, { day, counters });
  return counters;
}

function countersAt(policy: LimitPolicy, now: number): QuotaCounter[] {
  const counters: QuotaCounter[] = [];
  for (const period of QUOTA_PERIODS) {
    const limit = period === 'day' ? policy.perDay : policy.perMonth;
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
  counters: readonly Pick<QuotaCounter, 'period' | 'limit' | 'endsAt'>[],
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
