// The calendar periods quotas are counted over: the UTC day and the UTC month, named and bounded the same on every replica.

export const QUOTA_PERIODS = ['day', 'month'] as const;
export type QuotaPeriod = (typeof QUOTA_PERIODS)[number];

/** One period as counted: its name in counter keys (`2026-11-26`, `2026-11`) and when it ends (ms since the epoch). */
export interface PeriodSpan {
  name: string;
  startsAt: number;
  endsAt: number;
}

const twoDigits = (value: number): string => (value < 10 ? `0${value}` : String(value));

/** One quota of a key as a request found it: admitted ones included, `used` counts this request. */
export interface QuotaUse {
  limit: number;
  used: number;
  /** When the period ends: Retry-After on a refusal, the reset in the RateLimit fields. */
  endsAt: number;
}

/** What the key's quotas said of a request (on the request record); `refused`: the period whose quota refused it. */
export interface QuotaReading {
  day?: QuotaUse;
  month?: QuotaUse;
  refused?: QuotaPeriod;
}

const DAY_MS = 86_400_000;

/** The last span each kind of period was asked for, by the UTC day it was asked on: asked on every counted request. */
const lastAsked: Record<QuotaPeriod, { day: number; span: PeriodSpan | undefined }> = {
  day: { day: Number.NaN, span: undefined },
  month: { day: Number.NaN, span: undefined },
};

/** The period of `period` kind that holds the instant `now` (ms since the epoch), in UTC; the same object all day long. */
export function periodAt(period: QuotaPeriod, now: number): PeriodSpan {
  const day = Math.floor(now / DAY_MS);
  const last = lastAsked[period];
  if (last.day !== day || last.span === undefined) {
    last.span = spanAt(period, now);
    last.day = day;
  }
  return last.span;
}

function spanAt(period: QuotaPeriod, now: number): PeriodSpan {
  const at = new Date(now);
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  if (period === 'month') {
    return { name: `${year}-${twoDigits(month + 1)}`, startsAt: Date.UTC(year, month, 1), endsAt: Date.UTC(year, month + 1, 1) };
  }
  const day = at.getUTCDate();
  return { name: `${year}-${twoDigits(month + 1)}-${twoDigits(day)}`, startsAt: Date.UTC(year, month, day), endsAt: Date.UTC(year, month, day + 1) };
}
