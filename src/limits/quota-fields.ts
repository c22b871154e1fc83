// What a response says of the key's quotas: their items in the RateLimit fields beside the window's, Retry-After on a
// quota's refusal, and, for clients written for other gateways, the X-RateLimit-* fields when an operator opts in.
import type { Response } from 'express';
import type { WindowCount } from '../forks/rate-limit-fields.ts';
import { periodAt, QUOTA_PERIODS, type QuotaPeriod, type QuotaReading, type QuotaUse } from './quota-periods.ts';

/** The quota policies' names in the fields: apart from every operationId (those name the window's policy). */
export const QUOTA_POLICY_NAMES: Readonly<Record<QuotaPeriod, string>> = { day: 'quota-day', month: 'quota-month' };

const secondsUntil = (instant: number, now: number): number => Math.max(0, Math.ceil((instant - now) / 1000));

/**
 * The quotas' items of the RateLimit and RateLimit-Policy lists, written after the window's policy (draft 8 makes both
 * fields lists of policies). `partitionKey` is the quotas' (the key's, across operations).
 */
export function quotaFieldItems(quota: QuotaReading, partitionKey: string, now: number): { limits: string; policies: string } {
  let limits = '';
  let policies = '';
  for (const period of QUOTA_PERIODS) {
    const use = quota[period];
    if (use === undefined) continue;
    // The period's length from the span of now (the one the counters used, made once a day), not from the use's end.
    const { startsAt, endsAt } = periodAt(period, now);
    const name = QUOTA_POLICY_NAMES[period];
    limits += `${limits ? ', ' : ''}"${name}"; r=${Math.max(0, use.limit - use.used)}; t=${secondsUntil(use.endsAt, now)}`;
    policies += `${policies ? ', ' : ''}"${name}"; q=${use.limit}; w=${(endsAt - startsAt) / 1000}; pk=:${partitionKey}:`;
  }
  return { limits, policies };
}

/** Retry-After of a quota's refusal: the seconds until its period ends, when the key may call again. */
export function writeQuotaRetryAfter(res: Response, use: QuotaUse, now: number): void {
  if (!res.headersSent) res.setHeader('Retry-After', String(secondsUntil(use.endsAt, now)));
}

/**
 * X-RateLimit-Limit, -Remaining and -Reset (epoch seconds), as GitHub and express-rate-limit's legacy fields give
 * them: of the one policy that binds first, the one with the fewest requests left (the quota that refused, on a
 * quota's refusal). One policy only: these fields cannot say more.
 */
export function writeLegacyFields(res: Response, window: WindowCount, quota: QuotaReading | undefined): void {
  if (res.headersSent) return;
  let limit = window.limit;
  let remaining = window.remaining;
  let resetsAt = window.resetsAt;
  const binding = quota?.refused === undefined ? undefined : quota[quota.refused];
  for (const use of binding ? [binding] : QUOTA_PERIODS.map((period) => quota?.[period])) {
    if (use === undefined) continue;
    const left = Math.max(0, use.limit - use.used);
    if (binding || left < remaining) {
      limit = use.limit;
      remaining = left;
      resetsAt = use.endsAt;
    }
  }
  res.setHeader('X-RateLimit-Limit', String(limit));
  res.setHeader('X-RateLimit-Remaining', String(remaining));
  if (resetsAt !== undefined) res.setHeader('X-RateLimit-Reset', String(Math.ceil(resetsAt / 1000)));
}
