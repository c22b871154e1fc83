// reportStoreFailures: every rate-limit store failure counted, an outage logged once per 10 s.
import { describe, expect, it } from 'vitest';
import { RateLimitStoreUnavailableError, reportStoreFailures } from '../../../src/limits/rate-limit-store-failure.ts';
import { fixedClock } from '../../../src/time/clock.ts';

const T = Date.parse('2026-11-22T12:00:00Z');
const cause = new Error('connect ECONNREFUSED 127.0.0.1:6390');
const failure = new RateLimitStoreUnavailableError('Redis could not count the rate-limit hits', { cause });

function reporter() {
  const clock = fixedClock(T);
  const lines: Array<[object, string]> = [];
  const counted = { failures: 0 };
  const report = reportStoreFailures({
    logger: { warn: (fields, message) => lines.push([fields, message]) },
    clock,
    count: () => counted.failures++,
    mode: 'exact',
    policy: 'deny',
  });
  return { report, clock, lines, counted };
}

describe('reportStoreFailures', () => {
  it('counts every failure', () => {
    const { report, counted } = reporter();
    for (let i = 0; i < 3; i++) report(failure);
    expect(counted.failures).toBe(3);
  });

  it("logs an outage once, with Redis's error, however many failures it brings within 10 s", () => {
    const { report, clock, lines } = reporter();
    report(failure);
    clock.set(T + 5000);
    report(failure);
    clock.set(T + 9999);
    report(failure);
    expect(lines).toEqual([[{ err: cause, mode: 'exact', policy: 'deny' }, 'rate-limit store unreachable']]);
  });

  it('logs again once 10 s have passed since the last line', () => {
    const { report, clock, lines } = reporter();
    report(failure);
    clock.set(T + 10_000);
    report(failure);
    expect(lines).toHaveLength(2);
  });
});
