// The rate-limit store of a gateway without Redis (the embedded default, in-process tests): the library's memory
// store counts the windows, and the key's quotas are counted beside it, in this process alone.
import { type ClientRateLimitInfo, MemoryStore, type Options, type Store } from 'express-rate-limit';
import type { Clock } from '../time/clock.ts';
import { QuotaDesk, windowEndWithQuota, type CountsQuotas } from './limiter-channel.ts';
import { QuotaTallies } from './quota-tallies.ts';

export class InProcessRateLimitStore implements Store, CountsQuotas {
  readonly localKeys = true;
  readonly quotas = new QuotaDesk();
  readonly #windows = new MemoryStore();
  readonly #quotaTallies = new QuotaTallies('');
  readonly #clock: Clock;
  /** Tallies of ended periods are forgotten at most once a minute (a map walk). */
  #nextForgetAt = 0;

  /** `clock` decides the quotas' periods; the windows are the library's, on the wall clock. */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  init(options: Options): void {
    this.#windows.init(options);
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    const spec = this.quotas.specFor(key);
    const counted = await this.#windows.increment(key);
    if (spec === undefined) return counted;
    const now = this.#clock.now();
    if (now >= this.#nextForgetAt) {
      this.#quotaTallies.forgetEnded(now);
      this.#nextForgetAt = now + 60_000;
    }
    const quota = this.#quotaTallies.take(spec, counted.totalHits, now);
    return { totalHits: counted.totalHits, resetTime: windowEndWithQuota(counted.resetTime?.getTime() ?? now, quota) };
  }

  decrement(key: string): Promise<void> {
    return this.#windows.decrement(key);
  }

  resetKey(key: string): Promise<void> {
    return this.#windows.resetKey(key);
  }

  resetAll(): Promise<void> {
    return this.#windows.resetAll();
  }

  shutdown(): void {
    this.#windows.shutdown();
  }
}
