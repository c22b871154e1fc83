// The limiter's one interface: a store is asked to count a request against its policy and answers every reading.
// Windows and quotas are one policy (limits per window, per UTC day, per UTC month), counted in one call.
import type { QuotaReading } from './quota-periods.ts';

/** What a request is counted against: its key's and operation's limits, the window's and the quotas'. */
export interface LimitPolicy {
  /** The key id: quotas are the key's, across its operations. */
  keyId: string;
  /** The window's length (rateLimit.windowMs): fixed windows, from the first hit. */
  windowMs: number;
  /** Requests per window: a request over it is the rate limit's refusal and uses no quota. */
  perWindow: number;
  perDay?: number;
  perMonth?: number;
}

/** What a store counted for one request: the window's count and each quota's, their ends on the gateway's clock. */
export interface LimitReading {
  /** The instant (gateway's clock) the ends below are reckoned from: Retry-After and the fields' `t=` count from it. */
  at: number;
  /** The window's hits, this request's included. */
  hits: number;
  /** When the window resets (gateway's clock). */
  windowEndsAt: number;
  /** The key's quotas with this request; undefined when the policy has none. */
  quota: QuotaReading | undefined;
}

/**
 * Where requests are counted: in process, local-first, or exact in Redis. A store that cannot count throws or
 * rejects with RateLimitStoreUnavailableError (src/limits/rate-limit-store-failure.ts); the limiter's policy decides.
 */
export interface LimitStore {
  /** Counts one request of `key` (key id and operation) under `policy`. */
  count(key: string, policy: LimitPolicy): LimitReading | Promise<LimitReading>;
  /** The store sends a Redis command for every count before answering (exact): traced as a CLIENT `redis` span. */
  readonly countsInRedis: boolean;
}

/** Whether the policy has a quota (a day's or a month's) beside its window. */
export function hasQuota(policy: LimitPolicy): boolean {
  return policy.perDay !== undefined || policy.perMonth !== undefined;
}
