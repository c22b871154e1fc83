// Bounds failed admin authentications per source address: a fixed window per address, in process, in a bounded map.
import type { Clock } from '../time/clock.ts';

export interface FailedAttemptsOptions {
  /** Failures an address may make per window; the next attempt is refused until the window ends. */
  limit: number;
  windowMs: number;
  /** Addresses remembered at once; past it the oldest window is forgotten, so a spread of addresses cannot grow the process. */
  maxAddresses: number;
  clock: Clock;
}

export interface FailedAttempts {
  /** Milliseconds until `address` may try again, or 0 when it may now. */
  blockedFor(address: string): number;
  /** Counts a failed attempt of `address`. */
  fail(address: string): void;
}

/**
 * Hand-written rather than express-rate-limit's memory store: that store is unbounded and keeps its own
 * timers, where this one needs the injected clock (tests move it) and a size bound. Only failures count,
 * so an automation making many correct calls is never slowed; a blocked address is refused whatever it sends.
 */
export function createFailedAttempts(options: FailedAttemptsOptions): FailedAttempts {
  const { limit, windowMs, maxAddresses, clock } = options;
  for (const [name, value] of Object.entries({ limit, windowMs, maxAddresses })) {
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`createFailedAttempts: ${name} must be a positive integer, is ${value}`);
  }
  /** By address, in the order their windows opened (a Map keeps insertion order): the first is the oldest. */
  const windows = new Map<string, { failures: number; endsAt: number }>();

  function current(address: string, now: number) {
    const window = windows.get(address);
    if (window && window.endsAt <= now) windows.delete(address);
    return window && window.endsAt > now ? window : undefined;
  }

  return {
    blockedFor(address) {
      const now = clock.now();
      const window = current(address, now);
      return window && window.failures >= limit ? window.endsAt - now : 0;
    },
    fail(address) {
      const now = clock.now();
      const window = current(address, now);
      if (window) {
        window.failures++;
        return;
      }
      if (windows.size >= maxAddresses) windows.delete(windows.keys().next().value!);
      windows.set(address, { failures: 1, endsAt: now + windowMs });
    },
  };
}
