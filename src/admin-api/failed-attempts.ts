// Bounds failed admin authentications per source (an IPv4 address, an IPv6 /64): a fixed window each, in process, blocked sources kept until their block ends.
import ipaddr from 'ipaddr.js';
import type { Clock } from '../time/clock.ts';

export interface FailedAttemptsOptions {
  /** Failures a source may make per window; the next attempt is refused until the window ends. */
  limit: number;
  windowMs: number;
  /** Sources counted below the limit; past it the oldest is forgotten (never a blocked one), so addresses cannot grow the process. */
  maxAddresses: number;
  clock: Clock;
}

export interface FailedAttempts {
  /** Milliseconds until `address` may try again, or 0 when it may now. */
  blockedFor(address: string): number;
  /** Counts a failed attempt of `address`. */
  fail(address: string): void;
  /** Sources counted and sources blocked now (for tests and the log). */
  size(): { counting: number; blocked: number };
}

/**
 * An IPv4 address (mapped ones too) or an IPv6 address's /64, the smallest block a host is given (RFC 6177), so a
 * client cannot escape by moving within its prefix. Anything else (a Unix socket's empty address) is its own source.
 */
export function failureSource(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const prefix = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${prefix.map((part) => part.toString(16)).join(':')}::/64`;
}

/**
 * Not express-rate-limit's memory store, which is unbounded with its own timers: this needs the injected clock and a
 * bound that never frees a blocked source. Only failures count; a blocked source is refused whatever it sends.
 * Sources below the limit are bounded, oldest forgotten first; blocked ones need no bound (each cost `limit` failures
 * in one window) and are swept once a window.
 */
export function createFailedAttempts(options: FailedAttemptsOptions): FailedAttempts {
  const { limit, windowMs, maxAddresses, clock } = options;
  for (const [name, value] of Object.entries({ limit, windowMs, maxAddresses })) {
    if (!Number.isSafeInteger(value) || value < 1) throw new Error(`createFailedAttempts: ${name} must be a positive integer, is ${value}`);
  }
  /** By source, in the order their windows opened (a Map keeps insertion order): the first is the oldest. */
  const counting = new Map<string, { failures: number; endsAt: number }>();
  /** By source: when its block ends. */
  const blocked = new Map<string, number>();
  let sweepAt = clock.now() + windowMs;

  /** Drops every ended window, once a window: the tables never hold more than one window's sources for long. */
  function sweep(now: number): void {
    if (now < sweepAt) return;
    sweepAt = now + windowMs;
    for (const [source, endsAt] of blocked) if (endsAt <= now) blocked.delete(source);
    for (const [source, window] of counting) if (window.endsAt <= now) counting.delete(source);
  }

  function blockedUntil(source: string, now: number): number {
    const endsAt = blocked.get(source);
    if (endsAt === undefined) return 0;
    if (endsAt > now) return endsAt;
    blocked.delete(source);
    return 0;
  }

  return {
    blockedFor(address) {
      const now = clock.now();
      sweep(now);
      const endsAt = blockedUntil(failureSource(address), now);
      return endsAt === 0 ? 0 : endsAt - now;
    },
    fail(address) {
      const now = clock.now();
      sweep(now);
      const source = failureSource(address);
      if (blockedUntil(source, now) > 0) return;
      let window = counting.get(source);
      if (window && window.endsAt <= now) {
        counting.delete(source);
        window = undefined;
      }
      if (!window) {
        if (counting.size >= maxAddresses) counting.delete(counting.keys().next().value!);
        window = { failures: 0, endsAt: now + windowMs };
        counting.set(source, window);
      }
      window.failures++;
      if (window.failures < limit) return;
      counting.delete(source);
      blocked.set(source, window.endsAt);
    },
    size: () => ({ counting: counting.size, blocked: blocked.size }),
  };
}
