// The IETF RateLimit and RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers-08) and a refusal's
// Retry-After, written as express-rate-limit's `standardHeaders: 'draft-8'` writes them, byte for byte, except
// that each counter's partition key is hashed once, not on every request (decision 0013).
import { hash } from 'node:crypto';
import type { Response } from 'express';
import { LRUCache } from 'lru-cache';

/** How many counters' partition keys are remembered; past that the least recently used is forgotten (and hashed again if met). */
const REMEMBERED_KEYS = 10_000;

/** One window's count as the fields tell it: what express-rate-limit's per-request info holds, the reset as ms. */
export interface WindowCount {
  /** The counter key (key id and operation): hashed into the partition key. */
  key: string;
  limit: number;
  remaining: number;
  /** When the window resets (ms since the epoch, the clock `now` is read from); undefined: unknown. */
  resetsAt: number | undefined;
}

/**
 * The fields of one limiter (one window length). `name` is the quota's name in the fields (the operation id),
 * `count` what the limiter counted, `now` the instant the reset is reckoned from.
 */
export class RateLimitFields {
  readonly #windowSeconds: number;
  readonly #partitionKeys = new LRUCache<string, string>({ max: REMEMBERED_KEYS });

  constructor(windowMs: number) {
    this.#windowSeconds = Math.ceil(windowMs / 1000);
  }

  /**
   * RateLimit and RateLimit-Policy, on a request the limiter counted (let through or refused). Set, where the
   * library appends: the one limiter a request passes is the only writer of these fields, so the two agree.
   */
  write(res: Response, count: WindowCount, name: string, now: number, more?: { limits: string; policies: string }): void {
    if (res.headersSent) return;
    const limit = `"${name}"; r=${count.remaining}; t=${this.#resetSeconds(count, now)}`;
    const policy = `"${name}"; q=${count.limit}; w=${this.#windowSeconds}; pk=:${this.partitionKey(count.key)}:`;
    // `more`: further policies' items (the key's quotas), listed after this one's, as draft 8's lists allow.
    const listed = more !== undefined && more.limits !== '';
    res.setHeader('RateLimit', listed ? `${limit}, ${more.limits}` : limit);
    res.setHeader('RateLimit-Policy', listed ? `${policy}, ${more.policies}` : policy);
  }

  /** Retry-After on a refusal: the seconds until the window resets. */
  writeRetryAfter(res: Response, count: WindowCount, now: number): void {
    if (!res.headersSent) res.setHeader('Retry-After', String(this.#resetSeconds(count, now)));
  }

  // As the library reckons it, against `now` where it reads Date.now(): the stores place resets on the gateway's
  // clock (the wall clock in production), and the limiter passes the instant they were placed from.
  #resetSeconds(count: WindowCount, now: number): number {
    if (count.resetsAt === undefined) return this.#windowSeconds;
    return Math.max(0, Math.ceil((count.resetsAt - now) / 1000));
  }

  /**
   * The library's partition key: the first 12 hex digits of the counter key's SHA-256, in base64 (never the API key:
   * the counter key is key id and operation). Also the quotas' policies', made the same way from the key id.
   */
  partitionKey(key: string): string {
    let partitionKey = this.#partitionKeys.get(key);
    if (partitionKey === undefined) {
      partitionKey = Buffer.from(hash('sha256', key, 'hex').slice(0, 12)).toString('base64');
      this.#partitionKeys.set(key, partitionKey);
    }
    return partitionKey;
  }
}
