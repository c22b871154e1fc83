// The one place that relies on how express-rate-limit (8.x) carries a request from its key to its store and back:
// a quota spec handed to the store beside the counter key, and the store's quota reading handed back with the count.
//
// The library asks the store with the counter key alone (`store.increment(key)`) and keeps only `totalHits` and
// `resetTime` of the answer. Two behaviours of its middleware carry the rest, and test/unit/limits/limiter-channel.test.ts
// fails when either stops holding (an upgrade that changed them would otherwise count quotas wrongly, silently):
// - `keyGenerator(req, res)` runs in the same event-loop turn as, and just before, `store.increment` of the key it
//   returned: a spec left under that key is there when the store looks;
// - `resetTime` reaches `req.rateLimit.resetTime` as the very object the store answered (with skipFailedRequests and
//   skipSuccessfulRequests off, as the gateway runs it): a reading attached to it arrives with the request's own count.
import type { RateLimitInfo } from 'express-rate-limit';
import type { QuotaReading } from './quota-periods.ts';
import type { QuotaSpec } from './quota-count.ts';

/** Counter keys whose spec is held at once; past it the desk starts afresh (a spec is needed only until its increment, a moment later). */
const HELD_SPECS = 10_000;

/** Where the rate-limit stage leaves each counter key's quota spec for the store's increment to find. */
export class QuotaDesk {
  #specs = new Map<string, QuotaSpec>();

  /**
   * Before the library asks the store: the spec the next increments of `counterKey` count with (the latest one
   * wins: one key, one spec); none, for a key without quotas, takes back a spec left before its quotas were removed.
   */
  leave(counterKey: string, spec: QuotaSpec | undefined): void {
    if (spec === undefined) {
      if (this.#specs.size > 0) this.#specs.delete(counterKey);
      return;
    }
    const held = this.#specs.get(counterKey);
    // The same quotas as before: the spec held is kept, and what stores made of it (its counters) with it.
    if (held !== undefined && sameSpec(held, spec)) return;
    if (this.#specs.size >= HELD_SPECS && held === undefined) this.#specs = new Map();
    this.#specs.set(counterKey, spec);
  }

  /** In the store's increment: the spec of the key, or undefined when its key has no quota (the store counts the window only). */
  specFor(counterKey: string): QuotaSpec | undefined {
    return this.#specs.size === 0 ? undefined : this.#specs.get(counterKey);
  }
}

function sameSpec(a: QuotaSpec, b: QuotaSpec): boolean {
  return a.windowLimit === b.windowLimit && a.perDay === b.perDay && a.perMonth === b.perMonth && a.keyId === b.keyId;
}

/** A window's end that carries the quota reading of the one request it was answered to. */
class WindowEndWithQuota extends Date {
  readonly quota: QuotaReading;

  constructor(windowEndsAt: number, quota: QuotaReading) {
    super(windowEndsAt);
    this.quota = quota;
  }
}

/** The `resetTime` a store answers one request with, carrying that request's quota reading. */
export function windowEndWithQuota(windowEndsAt: number, quota: QuotaReading): Date {
  return new WindowEndWithQuota(windowEndsAt, quota);
}

/** The quota reading the store answered this request's count with; undefined when its key has no quota. */
export function quotaReadingOf(info: RateLimitInfo | undefined): QuotaReading | undefined {
  const resetTime = info?.resetTime;
  return resetTime instanceof WindowEndWithQuota ? resetTime.quota : undefined;
}

/** The stores that count quotas: each holds the desk the stage leaves specs on. */
export interface CountsQuotas {
  readonly quotas: QuotaDesk;
}
