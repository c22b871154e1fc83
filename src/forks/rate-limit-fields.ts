// The IETF RateLimit and RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers-08) and a refusal's
// Retry-After, written as express-rate-limit's `standardHeaders: 'draft-8'` writes them, byte for byte, except
// that each counter's partition key is hashed once, not on every request (decision 0013).
import { hash } from 'node:crypto';
import type { Response } from 'express';
import type { RateLimitInfo } from 'express-rate-limit';
import { LRUCache } from 'lru-cache';

/** How many counters' partition keys are remembered; past that the least recently used is forgotten (and hashed again if met). */
const REMEMBERED_KEYS = 10_000;

/**
 * The fields of one limiter (one window length). `name` is the quota's name in the fields (the operation id),
 * `info` what express-rate-limit counted (its `req.rateLimit`).
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
  write(res: Response, info: RateLimitInfo, name: string, more?: { limits: string; policies: string }): void {
    if (res.headersSent) return;
    const limit = `"${name}"; r=${info.remaining}; t=${this.#resetSeconds(info)}`;
    const policy = `"${name}"; q=${info.limit}; w=${this.#windowSeconds}; pk=:${this.partitionKey(info.key)}:`;
    // `more`: further policies' items (the key's quotas), listed after this one's, as draft 8's lists allow.
    const listed = more !== undefined && more.limits !== '';
    res.setHeader('RateLimit', listed ? `${limit}, ${more.limits}` : limit);
    res.setHeader('RateLimit-Policy', listed ? `${policy}, ${more.policies}` : policy);
  }

  /** Retry-After on a refusal: the seconds until the window resets. */
  writeRetryAfter(res: Response, info: RateLimitInfo): void {
    if (!res.headersSent) res.setHeader('Retry-After', String(this.#resetSeconds(info)));
  }

  // As the library reckons it: against the wall clock, which is also what its memory store's reset times are
  // made from (the Redis stores make theirs from the gateway's clock, which is the wall clock in production).
  #resetSeconds(info: RateLimitInfo): number {
    if (!info.resetTime) return this.#windowSeconds;
    return Math.max(0, Math.ceil((info.resetTime.getTime() - Date.now()) / 1000));
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
