// Per-key rate limits: counted by key id and operation, shared by every replica through the store; what a failing store means is decided here.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { type Logger as LibraryLogger, type RateLimitInfo, rateLimit, type Store } from 'express-rate-limit';
import { GatewayError, RETRY_SOON } from '../errors/gateway-error.ts';
import { callerOf } from '../auth/key-store.ts';
import { routeOf } from '../contract/operations.ts';
import type { Clock } from '../time/clock.ts';
import { monotonicMs } from '../time/monotonic.ts';
import { RateLimitFields } from '../forks/rate-limit-fields.ts';
import { InProcessRateLimitStore } from './in-process-rate-limit-store.ts';
import { quotaReadingOf, type CountsQuotas } from './limiter-channel.ts';
import { quotaSpecOf } from './quota-count.ts';
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
  store?: QuotaCountingStore;
  /** Decides the quotas' periods (UTC days and months) and what the fields say is left of them. */
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
  /** Where express-rate-limit's own reports go (a store whose `init` fails); silent when absent. */
  logger?: LibraryLogger;
}

/** How the rate-limit stage's decision went: a decision, or a failure that made none. */
export type RateLimitOutcome = 'allowed' | 'limited' | 'quota_exceeded' | 'store_unavailable' | 'failed';

/** What the rate-limit stage decided, and when (monotonic milliseconds; 0: not yet), on the request record: tracing reads them at completion. */
export interface RateLimitFacts {
  rateLimitStartMs: number;
  rateLimitEndMs: number;
  rateLimitOutcome: RateLimitOutcome | undefined;
  /** The decision waited for a Redis command of the store's (a store that CountsInRedis). */
  rateLimitWaitedForRedis: boolean;
  /** The name of the store's error, when it could not count, and what the policy did then. */
  rateLimitStoreError: string | undefined;
  onStoreError: 'allow' | 'deny' | undefined;
  /** The key's quotas as counted with this request; undefined when the key has none or the request was not counted. */
  quota: QuotaReading | undefined;
}

/** A store that counts the key's quotas with its window's hits (src/limits/limiter-channel.ts): every store of the gateway. */
export type QuotaCountingStore = Store & CountsQuotas;

/** A store that sends a Redis command for every hit before answering (exact): traced as a CLIENT `redis` span. */
export interface CountsInRedis {
  readonly countsInRedis: true;
}

function countsInRedis(store: Store | undefined): boolean {
  return store !== undefined && 'countsInRedis' in store && store.countsInRedis === true;
}

/** What the limiter counted for this request (express-rate-limit's `req.rateLimit`): none when the store could not count. */
function countedBy(req: Request): RateLimitInfo | undefined {
  return (req as Request & { rateLimit?: RateLimitInfo }).rateLimit;
}

/** The library would write its reports to the console, beside the gateway's JSON log. */
const SILENT: LibraryLogger = { error: () => undefined, warn: () => undefined };

/** A key's own limit is set per minute; the window may be another length. */
export function perWindow(perMinute: number, windowMs: number): number {
  return Math.max(1, Math.round((perMinute * windowMs) / 60_000));
}

/**
 * Runs after authentication, counting by key id, never client address (a NAT would share one). A store that cannot
 * count reaches `next` (`passOnStoreError: false`) where the policy decides: never through the library's logger,
 * whose calls may change in any minor release.
 */
export function createRateLimit(options: RateLimitOptions): RequestHandler {
  const { windowMs, limits, onStoreError, onStoreUnavailable, onPassedUnlimited, clock } = options;
  const store = options.store ?? new InProcessRateLimitStore(clock);
  const fields = new RateLimitFields(windowMs);
  const windowLimit = (res: Response): number => {
    const record = res.locals.gateway;
    const perMinute = callerOf(record).rateLimitPerMinute;
    if (perMinute !== undefined) return perWindow(perMinute, windowMs);
    return limits[routeOf(record).operation.id] ?? limits.default;
  };

  /** The fields of a counted request: the window's policy, then the quotas' (and the legacy fields, when asked for). */
  function announce(res: Response, info: RateLimitInfo, operation: string): void {
    const quota = (res.locals.gateway as RateLimitFacts).quota;
    fields.write(res, info, operation, quota && quotaFieldItems(quota, fields.partitionKey(callerOf(res.locals.gateway).keyId), clock.now()));
    if (options.legacyHeaders) writeLegacyFields(res, info, quota);
  }

  const limiter = rateLimit({
    windowMs,
    limit: (_req, res) => windowLimit(res),
    keyGenerator: (_req, res) => {
      const caller = callerOf(res.locals.gateway);
      const counterKey = `${caller.keyId}:${routeOf(res.locals.gateway).operation.id}`;
      // Left for the store, which the library asks with the key alone; a key without quotas leaves none.
      store.quotas.leave(
        counterKey,
        quotaSpecOf(caller, () => windowLimit(res)),
      );
      return counterKey;
    },
    // The draft-8 RateLimit fields are written by `fields` (below), as the library writes them: the library
    // hashes the partition key on every request (decision 0013). Nor does it then write Retry-After.
    standardHeaders: false,
    legacyHeaders: false,
    // The store's rejection goes to `next`, where limitRate (below) sees it first and applies the policy.
    passOnStoreError: false,
    store,
    // The checks are about keying by client address, which this limiter never does.
    validate: false,
    logger: options.logger ?? SILENT,
    handler: (req, res, next) => {
      const operation = routeOf(res.locals.gateway).operation.id;
      const info = countedBy(req);
      if (info !== undefined) {
        (res.locals.gateway as RateLimitFacts).quota = quotaReadingOf(info);
        announce(res, info, operation);
        fields.writeRetryAfter(res, info);
      }
      options.onLimited?.(operation);
      next(new GatewayError('rate_limited', `Rate limit for ${operation} exceeded; retry after the time in Retry-After`));
    },
  });
  const waitsForRedis = countsInRedis(store);

  /** What the policy does once the limiter decided: `error` is the limiter's (a refusal, the store's failure) or none. */
  function decided(req: Request, res: Response, error: unknown, next: NextFunction): void {
    const facts: RateLimitFacts = res.locals.gateway;
    facts.rateLimitEndMs = monotonicMs();
    if (error === undefined) {
      const info = countedBy(req);
      if (info !== undefined) {
        const quota = quotaReadingOf(info);
        facts.quota = quota;
        const operation = routeOf(res.locals.gateway).operation.id;
        announce(res, info, operation);
        const refusedBy = quota?.refused;
        if (refusedBy !== undefined) {
          facts.rateLimitOutcome = 'quota_exceeded';
          const use = quota![refusedBy]!;
          writeQuotaRetryAfter(res, use, clock.now());
          options.onQuotaRefused?.(operation, refusedBy);
          next(
            new GatewayError(
              'quota_exceeded',
              `The ${refusedBy}'s quota of ${use.limit} requests for this API key is used up; retry after the time in Retry-After`,
            ),
          );
          return;
        }
      }
      facts.rateLimitOutcome = 'allowed';
    }
    if (!(error instanceof RateLimitStoreUnavailableError)) {
      if (error !== undefined) facts.rateLimitOutcome = error instanceof GatewayError && error.code === 'rate_limited' ? 'limited' : 'failed';
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

  return function limitRate(req, res, next) {
    const facts: RateLimitFacts = res.locals.gateway;
    facts.rateLimitStartMs = monotonicMs();
    facts.rateLimitWaitedForRedis = waitsForRedis;
    return limiter(req, res, (error?: unknown) => decided(req, res, error, next));
  };
}
