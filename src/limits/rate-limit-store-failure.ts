// How a rate-limit store says it cannot count, and how those failures are reported: each one counted, an outage logged once a while.
import type { GatewayConfig } from '../config/schema.ts';
import type { Clock } from '../time/clock.ts';

/**
 * What a rate-limit store rejects with when it cannot count; `cause` is what failed. No HTTP: the request gets the
 * limiter's policy (`rateLimit.onStoreError`). Anything else a store throws is a bug.
 */
export class RateLimitStoreUnavailableError extends Error {
  override name = 'RateLimitStoreUnavailableError';
}

/** Store failures come per request; an outage is logged once per this period. */
const OUTAGE_LOG_INTERVAL_MS = 10_000;

export interface StoreFailureReportOptions {
  /** Where the outage is logged (at warn); pino's logger or anything with its `warn(fields, message)`. */
  logger: { warn(fields: object, message: string): void };
  clock: Clock;
  /** Told of every failure (rate_limit_store_errors_total). */
  count?: () => void;
  /** Said in the log line: where the counts are kept, and what requests get meanwhile. */
  mode: GatewayConfig['rateLimit']['mode'];
  policy: GatewayConfig['rateLimit']['onStoreError'];
}

/** Every store failure counted, the outage logged once per 10 s (a line per request would flood the log), naming Redis's error. */
export function reportStoreFailures(options: StoreFailureReportOptions): (failure: RateLimitStoreUnavailableError) => void {
  const { logger, clock, count, mode, policy } = options;
  let lastLogged = -Infinity;
  return function reportStoreFailure(failure) {
    count?.();
    const now = clock.now();
    if (now - lastLogged < OUTAGE_LOG_INTERVAL_MS) return;
    lastLogged = now;
    logger.warn({ err: failure.cause, mode, policy }, 'rate-limit store unreachable');
  };
}
