// Fails fast while the upstream is down, instead of making every client wait for it to time out.
import type { RequestHandler } from 'express';
import { BrokenCircuitError, CircuitState, ConsecutiveBreaker, circuitBreaker, handleWhenResult } from 'cockatiel';
import { GatewayError } from '../errors/gateway-error.ts';

export interface CircuitBreakerOptions {
  /** Consecutive failed exchanges (refused, reset, timed out, or a 502/503/504 answer) that open the circuit. */
  failureThreshold: number;
  /** How long the circuit stays open before one trial request is let through (half-open). */
  openMs: number;
  /** Told of every state change, for logs and metrics. */
  onStateChange?: (state: 'closed' | 'open' | 'half_open') => void;
}

const STATE_NAMES: Record<CircuitState, 'closed' | 'open' | 'half_open'> = {
  [CircuitState.Closed]: 'closed',
  [CircuitState.Open]: 'open',
  [CircuitState.HalfOpen]: 'half_open',
  [CircuitState.Isolated]: 'open',
};

/** Upstream answers that say the upstream itself is unwell; other 5xx are the application's business. */
const UNHEALTHY_STATUSES = new Set([502, 503, 504]);

/**
 * Wraps the proxy stage. An exchange counts as failed when it did not complete or the upstream
 * answered 502/503/504; client errors and other answers count as success.
 */
export function createCircuitBreaker(proxy: RequestHandler, options: CircuitBreakerOptions): RequestHandler {
  const policy = circuitBreaker(handleWhenResult((outcome) => outcome === 'unhealthy'), {
    halfOpenAfter: options.openMs,
    breaker: new ConsecutiveBreaker(options.failureThreshold),
  });
  if (options.onStateChange) {
    const report = options.onStateChange;
    policy.onStateChange((state) => report(STATE_NAMES[state]));
  }
  const retryAfter = String(Math.max(1, Math.ceil(options.openMs / 1000)));

  return async function proxyThroughBreaker(req, res, next) {
    try {
      await policy.execute(async () => {
        await proxy(req, res, next);
        const { upstreamFailure, upstreamStatus } = res.locals.gateway;
        return upstreamFailure !== undefined || (upstreamStatus !== undefined && UNHEALTHY_STATUSES.has(upstreamStatus)) ? 'unhealthy' : 'healthy';
      });
    } catch (error) {
      if (!(error instanceof BrokenCircuitError)) throw error;
      throw new GatewayError('upstream_unavailable', 'The pet store backend is unavailable; retry shortly', {
        cause: error,
        headers: { 'Retry-After': retryAfter },
      });
    }
  };
}
