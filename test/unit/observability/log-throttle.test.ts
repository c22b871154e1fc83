// A few lines of a kind per interval, the rest told as one count: when the next interval starts, or by a timer when nothing follows.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogThrottle } from '../../../src/observability/log-throttle.ts';
import { fixedClock } from '../../../src/time/clock.ts';

function throttle() {
  const clock = fixedClock(1_000_000);
  const summaries: number[] = [];
  return { clock, summaries, log: createLogThrottle({ linesPerInterval: 2, intervalMs: 10_000, clock, summarize: (n) => summaries.push(n) }) };
}

afterEach(() => vi.useRealTimers());

describe('createLogThrottle', () => {
  it('admits the first lines of an interval and counts the rest', () => {
    const { log, summaries } = throttle();
    expect(Array.from({ length: 5 }, () => log.admit())).toEqual([true, true, false, false, false]);
    expect(summaries).toEqual([]);
  });

  it('tells the count of the interval before the next interval’s first line', () => {
    const { clock, log, summaries } = throttle();
    for (let i = 0; i < 5; i++) log.admit();
    clock.set(1_000_000 + 10_000);
    expect(log.admit()).toBe(true);
    expect(summaries).toEqual([3]);
  });

  it('tells the count when the interval ends even if nothing follows', () => {
    vi.useFakeTimers();
    const { log, summaries } = throttle();
    for (let i = 0; i < 4; i++) log.admit();
    vi.advanceTimersByTime(9_999);
    expect(summaries).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(summaries).toEqual([2]);
  });

  it('tells nothing for an interval whose lines were all admitted', () => {
    const { clock, log, summaries } = throttle();
    log.admit();
    clock.set(1_000_000 + 10_000);
    log.admit();
    log.flush();
    expect(summaries).toEqual([]);
  });
});
