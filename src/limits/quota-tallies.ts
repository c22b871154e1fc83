// Quota counts kept in process: alone (a gateway without Redis), or sent to Redis in batches (local-first mode).
import type { LimitPolicy } from './limit-store.ts';
import { admittedOf, quotaCounterKey, quotaCounters, readingAt } from './quota-count.ts';
import type { QuotaReading } from './quota-periods.ts';

/** One quota counter of one key and period, as this process knows it. */
export interface QuotaTally {
  /** The replicas' count as Redis last answered it, this process's sent requests included; 0 without Redis. */
  synced: number;
  /** Requests admitted here and not yet sent. */
  pending: number;
  /** When its period ends (ms since the epoch). */
  endsAt: number;
}

export class QuotaTallies {
  readonly #prefix: string;
  /** By the counter's Redis key, which names the key id, the period and its name: a new period is a new tally. */
  readonly #tallies = new Map<string, QuotaTally>();

  /** `prefix`: of the quota counters' Redis keys, the same as the exact store's, so a change of mode keeps the counts. */
  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  /** Counts one request whose window total (itself included) is `windowTotal`; a request the quotas refuse takes nothing. */
  take(policy: LimitPolicy, windowTotal: number, now: number): QuotaReading {
    const counters = quotaCounters(policy, now);
    const tallies = counters.map((counter) => this.#tallyFor(quotaCounterKey(this.#prefix, policy.keyId, counter), counter.endsAt));
    const usedBefore = tallies.map((tally) => tally.synced + tally.pending);
    const admitted = admittedOf(1, windowTotal, policy.perWindow, counters, usedBefore);
    if (admitted === 1) for (const tally of tallies) tally.pending++;
    return readingAt(0, admitted, windowTotal <= policy.perWindow, counters, usedBefore);
  }

  #tallyFor(redisKey: string, endsAt: number): QuotaTally {
    let tally = this.#tallies.get(redisKey);
    if (tally === undefined) {
      tally = { synced: 0, pending: 0, endsAt };
      this.#tallies.set(redisKey, tally);
    }
    return tally;
  }

  /** The tallies with requests to send, by Redis key; tallies of periods over (by `graceMs`) are forgotten on the way. */
  unsent(now: number, graceMs: number): Array<[string, QuotaTally, number]> {
    const unsent: Array<[string, QuotaTally, number]> = [];
    for (const [redisKey, tally] of this.#tallies) {
      if (tally.endsAt + graceMs <= now) {
        this.#tallies.delete(redisKey);
        continue;
      }
      if (tally.pending > 0) unsent.push([redisKey, tally, tally.pending]);
    }
    return unsent;
  }

  /** Forgets tallies whose period is over: without Redis, nothing else would. */
  forgetEnded(now: number): void {
    for (const [redisKey, tally] of this.#tallies) if (tally.endsAt <= now) this.#tallies.delete(redisKey);
  }
}
