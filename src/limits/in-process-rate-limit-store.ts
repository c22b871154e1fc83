// The limit store of a gateway without Redis (the embedded default, in-process tests): windows and quotas counted in
// this process alone, on the gateway's clock.
import type { Clock } from '../time/clock.ts';
import { hasQuota, type LimitPolicy, type LimitReading, type LimitStore } from './limit-store.ts';
import { QuotaTallies } from './quota-tallies.ts';

/** One key's fixed window: it starts with its first hit, as the exact store's (and express-rate-limit's memory store's) do. */
interface Window {
  hits: number;
  endsAt: number;
}

/** Ended windows and quota tallies are forgotten at most once this often (a walk of the maps). */
const FORGET_EVERY_MS = 60_000;

export class InProcessRateLimitStore implements LimitStore {
  readonly countsInRedis = false;
  readonly #windows = new Map<string, Window>();
  readonly #quotaTallies = new QuotaTallies('');
  readonly #clock: Clock;
  #nextForgetAt = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  count(key: string, policy: LimitPolicy): LimitReading {
    const now = this.#clock.now();
    if (now >= this.#nextForgetAt) this.#forgetEnded(now);
    let window = this.#windows.get(key);
    if (window === undefined || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + policy.windowMs };
      this.#windows.set(key, window);
    }
    window.hits++;
    const quota = hasQuota(policy) ? this.#quotaTallies.take(policy, window.hits, now) : undefined;
    return { at: now, hits: window.hits, windowEndsAt: window.endsAt, quota };
  }

  #forgetEnded(now: number): void {
    for (const [key, window] of this.#windows) if (window.endsAt <= now) this.#windows.delete(key);
    this.#quotaTallies.forgetEnded(now);
    this.#nextForgetAt = now + FORGET_EVERY_MS;
  }
}
