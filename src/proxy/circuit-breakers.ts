// The circuit breakers in front of each version's upstream, kept across configuration reloads while their settings stay the same.
import { createCircuitBreaker, type CircuitBreakerOptions, type GuardedExchange } from './circuit-breaker.ts';

export type CircuitState = 'closed' | 'open' | 'half_open';
type BreakerSettings = Omit<CircuitBreakerOptions, 'onStateChange'>;

/**
 * One breaker per version's upstream, kept by a reload that keeps its settings (an open circuit stays open). `report` hears whether
 * any breaker in use is not closed, so a replaced one cannot leave the gauge at 1.
 */
export class CircuitBreakers {
  readonly #report: (state: CircuitState) => void;
  readonly #inUse = new Map<string, { settings: string; guarded: GuardedExchange }>();
  readonly #notClosed = new Set<string>();

  constructor(report: (state: CircuitState) => void) {
    this.#report = report;
  }

  /** The breaker for `basePath` with `settings`: the one in use when its settings are the same, else a new, closed one. */
  for(basePath: string, settings: BreakerSettings): GuardedExchange {
    const key = JSON.stringify([settings.failureThreshold, settings.openMs]);
    const kept = this.#inUse.get(basePath);
    if (kept?.settings === key) return kept.guarded;
    const guarded: GuardedExchange = createCircuitBreaker({
      ...settings,
      onStateChange: (state) => {
        // A breaker replaced by a reload may still see its last requests settle: it no longer speaks for the upstream.
        if (this.#inUse.get(basePath)?.guarded !== guarded) return;
        this.#set(basePath, state);
      },
    });
    this.#inUse.set(basePath, { settings: key, guarded });
    this.#set(basePath, 'closed');
    return guarded;
  }

  #set(basePath: string, state: CircuitState): void {
    if (state === 'closed') this.#notClosed.delete(basePath);
    else this.#notClosed.add(basePath);
    this.#report(this.#notClosed.size === 0 ? 'closed' : 'open');
  }
}
