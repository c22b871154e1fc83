// Fails fast while the upstream is down, instead of making every client wait for it to time out.
import { BrokenCircuitError, CircuitState, ConsecutiveBreaker, circuitBreaker, handleWhen } from 'cockatiel';
import { GatewayError } from '../errors/gateway-error.ts';
import type { ExchangeOutcome } from './exchange.ts';
import { UpstreamFailure } from './upstream-failure.ts';

export interface CircuitBreakerOptions {
  /** Consecutive failed exchanges (refused, reset, timed out, or a 502/503/504 answer) that open the circuit. */
  failureThreshold: number;
  /** How long the circuit stays open before one trial request is let through (half-open); others are refused until it ends. */
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

/** An exchange failed when it did not complete or the upstream said it is unwell; a client leaving is no failure. */
function isUnhealthy(outcome: ExchangeOutcome): boolean {
  return outcome.failure !== undefined || (!outcome.clientClosed && UNHEALTHY_STATUSES.has(outcome.status));
}

export type GuardedExchange = (attempt: () => Promise<ExchangeOutcome>) => Promise<ExchangeOutcome>;

/** Wraps the exchange: counts its failures, and while open refuses with 503 upstream_unavailable without calling it. */
export function createCircuitBreaker(options: CircuitBreakerOptions): GuardedExchange {
  const policy = circuitBreaker(
    // An answer made for another request says the backend wrote one too many, not that it is down: it answers, and opening the
    // circuit would turn the refusals that name the fault (502 upstream_answer_mismatch) into 503s that hide it.
    handleWhen((error) => error instanceof UpstreamFailure && error.kind !== 'answer_mismatch').orWhenResult((outcome) =>
      isUnhealthy(outcome as ExchangeOutcome),
    ),
    { halfOpenAfter: options.openMs, breaker: new ConsecutiveBreaker(options.failureThreshold) },
  );
  if (options.onStateChange) {
    const report = options.onStateChange;
    policy.onStateChange((state) => report(STATE_NAMES[state]));
  }
  const retryAfter = String(Math.max(1, Math.ceil(options.openMs / 1000)));

  const unavailable = (cause?: unknown) =>
    new GatewayError('upstream_unavailable', 'The pet store backend is unavailable; retry shortly', {
      ...(cause === undefined ? {} : { cause }),
      headers: { 'Retry-After': retryAfter },
    });

  return async function guardedExchange(attempt) {
    // Half-open means the one trial request is in flight (cockatiel samples one call). cockatiel makes
    // every other call wait for its outcome, up to the upstream's timeout; the circuit is still not
    // known to be closed, so they are refused at once, as while it is open.
    if (policy.state === CircuitState.HalfOpen) throw unavailable();
    try {
      return await policy.execute(attempt);
    } catch (error) {
      if (!(error instanceof BrokenCircuitError)) throw error;
      throw unavailable(error);
    }
  };
}
