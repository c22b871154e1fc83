// Per-key rate limits and quotas: counted by key id and operation, shared by every replica through the store; what a
// failing store means is decided here. The gateway's own limiter (decision 0026): express-rate-limit's draft-8 fields
// stay the oracle of the fields it writes (src/forks/rate-limit-fields.ts).
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { GatewayError, RETRY_SOON } from '../errors/gateway-error.ts';
import { callerOf, type Consumer } from '../auth/key-store.ts';
import { routeOf } from '../contract/operations.ts';
import type { Clock } from '../time/clock.ts';
import { monotonicMs } from '../time/monotonic.ts';
import { RateLimitFields, type WindowCount } from '../forks/rate-limit-fields.ts';
import { InProcessRateLimitStore } from './in-process-rate-limit-store.ts';
import type { LimitPolicy, LimitReading, LimitStore } from './limit-store.ts';
import { quotaFieldItems, writeLegacyFields, writeQuotaRetryAfter } from './quota-fields.ts';
import type { QuotaPeriod, QuotaReading } from './quota-periods.ts';
import { RateLimitStoreUnavailableError } from './rate-limit-store-failure.ts';

export interface RateLimitOptions {
  /** Fixed window length. */
  windowMs: number;
  /** Requests per window by operationId, with `default` for the others. */
  limits: Readonly<Record<string, number>> & { default: number };
  /**
   * Where hits and quotas are counted (in process when absent). One that cannot count rejects with
   * RateLimitStoreUnavailableError.
   */
  store?: LimitStore;
  /** The in-process store's clock (windows, UTC days and months); the others are given theirs. */
  clock: Clock;
  /** Also write X-RateLimit-Limit, -Remaining and -Reset (config `rateLimit.legacyHeaders`). */
  legacyHeaders?: boolean;
  /** The store cannot count: let requests through unlimited (`allow`) or answer 503 (`deny`). */
  onStoreError: 'allow' | 'deny';
  /** Told of every refusal, for metrics. */
  onLimited?: (operation: string) => void;
  /** Told of every refusal by a quota, for metrics. */
  onQuotaRefused?: (operation: string, period: QuotaPeriod) => void;
  /** Told of every request the store could not count, whatever the policy then does (metrics, the outage log). */
  onStoreUnavailable?: (failure: RateLimitStoreUnavailableError) => void;
  /** Told of every request let through unlimited because the store could not count it (policy `allow`). */
  onPassedUnlimited?: () => void;
}

/** How the rate-limit stage's decision went: a decision, or a failure that made none. */
export type RateLimitOutcome = 'allowed' | 'limited' | 'quota_exceeded' | 'store_unavailable' | 'failed';

/** What the rate-limit stage decided, and when (monotonic milliseconds; 0: not yet), on the request record: tracing reads them at completion. */
export interface RateLimitFacts {
  rateLimitStartMs: number;
  rateLimitEndMs: number;
  rateLimitOutcome: RateLimitOutcome | undefined;
  /** The decision waited for a Redis command of the store's (a store that `countsInRedis`). */
  rateLimitWaitedForRedis: boolean;
  /** The name of the store's error, when it could not count, and what the policy did then. */
  rateLimitStoreError: string | undefined;
  onStoreError: 'allow' | 'deny' | undefined;
  /** The key's quotas as counted with this request; undefined when the key has none or the request was not counted. */
  quota: QuotaReading | undefined;
}

/** A key's own limit is set per minute; the window may be another length. */
export function perWindow(perMinute: number, windowMs: number): number {
  return Math.max(1, Math.round((perMinute * windowMs) / 60_000));
}

/**
 * Runs after authentication, counting by key id, never client address (a NAT would share one): the store is asked
 * once per request with the request's whole policy (window and quotas) and answers every reading. A store that cannot
 * count leaves the decision to `onStoreError`.
 */
export function createRateLimit(options: RateLimitOptions): RequestHandler {
  const { windowMs, limits, onStoreError, onStoreUnavailable, onPassedUnlimited, clock } = options;
  const store = options.store ?? new InProcessRateLimitStore(clock);
  const fields = new RateLimitFields(windowMs);
  const waitsForRedis = store.countsInRedis;
  /** Each caller's last policy: the same object while its limits stay (stores keep per-policy work, the quotas' counters, by it). */
  const policies = new WeakMap<Consumer, LimitPolicy>();

  function policyOf(caller: Consumer, operation: string): LimitPolicy {
    const { rateLimitPerMinute, quotaPerDay, quotaPerMonth } = caller;
    const limit = rateLimitPerMinute !== undefined ? perWindow(rateLimitPerMinute, windowMs) : (limits[operation] ?? limits.default);
    const held = policies.get(caller);
    if (held !== undefined && held.perWindow === limit) return held;
    const policy: LimitPolicy = {
      keyId: caller.keyId,
      windowMs,
      perWindow: limit,
      ...(quotaPerDay === undefined ? {} : { perDay: quotaPerDay }),
      ...(quotaPerMonth === undefined ? {} : { perMonth: quotaPerMonth }),
    };
    policies.set(caller, policy);
    return policy;
  }

  /** The fields of a counted request: the window's policy, then the quotas' (and the legacy fields, when asked for). */
  function announce(res: Response, count: WindowCount, reading: LimitReading, operation: string, keyId: string): void {
    const { quota, at } = reading;
    fields.write(res, count, operation, at, quota && quotaFieldItems(quota, fields.partitionKey(keyId), at));
    if (options.legacyHeaders) writeLegacyFields(res, count, quota);
  }

  /** What the policy does with what the store counted. */
  function counted(res: Response, key: string, policy: LimitPolicy, operation: string, reading: LimitReading, next: NextFunction): void {
    const facts: RateLimitFacts = res.locals.gateway;
    facts.rateLimitEndMs = monotonicMs();
    const { quota, hits } = reading;
    facts.quota = quota;
    const limit = policy.perWindow;
    const count: WindowCount = { key, limit, remaining: Math.max(0, limit - hits), resetsAt: reading.windowEndsAt };
    announce(res, count, reading, operation, policy.keyId);
    if (hits > limit) {
      facts.rateLimitOutcome = 'limited';
      fields.writeRetryAfter(res, count, reading.at);
      options.onLimited?.(operation);
      next(new GatewayError('rate_limited', `Rate limit for ${operation} exceeded; retry after the time in Retry-After`));
      return;
    }
    const refusedBy = quota?.refused;
    if (refusedBy !== undefined) {
      facts.rateLimitOutcome = 'quota_exceeded';
      const use = quota![refusedBy]!;
      writeQuotaRetryAfter(res, use, reading.at);
      options.onQuotaRefused?.(operation, refusedBy);
      next(
        new GatewayError(
          'quota_exceeded',
          `The ${refusedBy}'s quota of ${use.limit} requests for this API key is used up; retry after the time in Retry-After`,
        ),
      );
      return;
    }
    facts.rateLimitOutcome = 'allowed';
    next();
  }

  /** What the policy does when the store could not count: `onStoreError` for its failure; anything else is a bug (500). */
  function uncounted(res: Response, error: unknown, next: NextFunction): void {
    const facts: RateLimitFacts = res.locals.gateway;
    facts.rateLimitEndMs = monotonicMs();
    if (!(error instanceof RateLimitStoreUnavailableError)) {
      facts.rateLimitOutcome = 'failed';
      next(error);
      return;
    }
    facts.rateLimitOutcome = 'store_unavailable';
    facts.rateLimitStoreError = error.name;
    facts.onStoreError = onStoreError;
    onStoreUnavailable?.(error);
    if (onStoreError === 'deny') {
      next(new GatewayError('service_unavailable', 'Rate limits cannot be checked right now; retry shortly', { cause: error, headers: RETRY_SOON }));
      return;
    }
    // Let through before any RateLimit field was set: none tells a quota that was not checked.
    onPassedUnlimited?.();
    next();
  }

  return function limitRate(_req: Request, res: Response, next: NextFunction): void {
    const facts: RateLimitFacts = res.locals.gateway;
    facts.rateLimitStartMs = monotonicMs();
    facts.rateLimitWaitedForRedis = waitsForRedis;
    const caller = callerOf(res.locals.gateway);
    const operation = routeOf(res.locals.gateway).operation.id;
    const key = `${caller.keyId}:${operation}`;
    const policy = policyOf(caller, operation);
    let reading: LimitReading | Promise<LimitReading>;
    try {
      reading = store.count(key, policy);
    } catch (error) {
      uncounted(res, error, next);
      return;
    }
    if (reading instanceof Promise) {
      reading.then(
        (answered) => counted(res, key, policy, operation, answered, next),
        (error: unknown) => uncounted(res, error, next),
      );
      return;
    }
    counted(res, key, policy, operation, reading, next);
  };
}
