// The breaker's states on a fake clock: open after consecutive failures, one trial when half-open, closed after it succeeds.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../src/errors/gateway-error.ts';
import { createCircuitBreaker, type GuardedExchange } from '../../../src/proxy/circuit-breaker.ts';
import type { ExchangeOutcome } from '../../../src/proxy/exchange.ts';
import { UpstreamFailure } from '../../../src/proxy/upstream-failure.ts';

const OK: ExchangeOutcome = { status: 200, upstreamMs: 1 };
const failing = () => Promise.reject(new UpstreamFailure('refused', 'refused'));
const succeeding = () => Promise.resolve(OK);

let states: string[];
let guarded: GuardedExchange;
beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse('2026-11-21T12:00:00Z') });
  states = [];
  guarded = createCircuitBreaker({ failureThreshold: 2, openMs: 1000, onStateChange: (state) => states.push(state) });
});
afterEach(() => vi.useRealTimers());

async function refusal(attempt: () => Promise<ExchangeOutcome>): Promise<unknown> {
  return guarded(attempt).then(
    () => 'passed',
    (error: unknown) => (error instanceof GatewayError ? { code: error.code, status: error.status, headers: error.headers } : error),
  );
}

async function open(): Promise<void> {
  for (let i = 0; i < 2; i++) await expect(guarded(failing)).rejects.toBeInstanceOf(UpstreamFailure);
}

describe('createCircuitBreaker', () => {
  it('opens after failureThreshold consecutive failures and refuses without calling the upstream', async () => {
    await open();
    const attempt = vi.fn(succeeding);
    expect(await refusal(attempt)).toEqual({ code: 'upstream_unavailable', status: 503, headers: { 'Retry-After': '1' } });
    expect(attempt).not.toHaveBeenCalled();
    expect(states).toEqual(['open']);
  });

  it('lets one trial through after openMs and refuses every other call at once while it is in flight', async () => {
    await open();
    vi.advanceTimersByTime(1000);
    let finishTrial: (outcome: ExchangeOutcome) => void = () => undefined;
    const trial = guarded(() => new Promise((resolve) => (finishTrial = resolve)));
    const other = vi.fn(succeeding);
    expect(await refusal(other)).toEqual({ code: 'upstream_unavailable', status: 503, headers: { 'Retry-After': '1' } });
    expect(other).not.toHaveBeenCalled();
    finishTrial(OK);
    expect(await trial).toBe(OK);
    expect(states).toEqual(['open', 'half_open', 'closed']);
  });

  it('opens again when the trial fails', async () => {
    await open();
    vi.advanceTimersByTime(1000);
    await expect(guarded(failing)).rejects.toBeInstanceOf(UpstreamFailure);
    expect(await refusal(succeeding)).toMatchObject({ code: 'upstream_unavailable' });
    expect(states).toEqual(['open', 'half_open', 'open']);
  });

  it('counts an unhealthy answer (502, 503, 504) as a failure', async () => {
    await guarded(() => Promise.resolve({ status: 503, upstreamMs: 1 }));
    await guarded(() => Promise.resolve({ status: 502, upstreamMs: 1 }));
    expect(states).toEqual(['open']);
  });

  it('does not count a client that left before the answer was complete', async () => {
    for (let i = 0; i < 3; i++) await guarded(() => Promise.resolve({ status: 503, upstreamMs: 1, clientClosed: true }));
    expect(states).toEqual([]);
  });
});
