// watchParent: told once when the process that started the gateway is gone, and not before.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startedByNpm, watchParent } from '../../../src/wiring/parent-watch.ts';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('watchParent', () => {
  it('is told once, at the first look after the parent changed', () => {
    let parent = 100;
    const gone = vi.fn();
    watchParent({ parentPid: 100, currentParent: () => parent, everyMs: 500, onGone: gone });
    vi.advanceTimersByTime(1000);
    expect(gone).not.toHaveBeenCalled();
    parent = 1;
    vi.advanceTimersByTime(500);
    vi.advanceTimersByTime(5000);
    expect(gone).toHaveBeenCalledTimes(1);
  });

  it('is told nothing once stopped', () => {
    const gone = vi.fn();
    const stop = watchParent({ parentPid: 100, currentParent: () => 1, everyMs: 500, onGone: gone });
    stop();
    vi.advanceTimersByTime(5000);
    expect(gone).not.toHaveBeenCalled();
  });
});

describe('startedByNpm', () => {
  it.each([
    [{ npm_lifecycle_event: 'start' }, true],
    [{ npm_lifecycle_event: 'bench' }, false],
    [{ npm_lifecycle_event: '' }, false],
    [{}, false],
  ])('%o: %s', (env, expected) => {
    expect(startedByNpm(env)).toBe(expected);
  });
});
