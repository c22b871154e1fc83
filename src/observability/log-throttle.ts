// At most a few lines of one kind per interval: the rest are counted, and their number told in one line when the interval ends.
import type { Clock } from '../time/clock.ts';

export interface LogThrottleOptions {
  /** Occurrences logged in full per interval. */
  linesPerInterval: number;
  intervalMs: number;
  clock: Clock;
  /** Writes the line that tells how many occurrences of the interval were not logged one by one. */
  summarize(suppressed: number): void;
}

export interface LogThrottle {
  /** True when this occurrence is to be logged in full; otherwise it is counted for the interval's summary. */
  admit(): boolean;
  /** Writes the summary of what was counted and not logged, if anything was. */
  flush(): void;
}

/**
 * A client flooding wrong credentials would write a line a request: an interval's first lines keep their detail, the
 * rest become one count, written by an unref'd timer at the interval's end so a burst is told even if nothing follows.
 */
export function createLogThrottle(options: LogThrottleOptions): LogThrottle {
  const { linesPerInterval, intervalMs, clock, summarize } = options;
  let intervalEndsAt = Number.NEGATIVE_INFINITY;
  let logged = 0;
  let suppressed = 0;
  let timer: NodeJS.Timeout | undefined;

  function flush(): void {
    clearTimeout(timer);
    timer = undefined;
    if (suppressed === 0) return;
    const count = suppressed;
    suppressed = 0;
    summarize(count);
  }

  return {
    admit() {
      const now = clock.now();
      if (now >= intervalEndsAt) {
        flush();
        intervalEndsAt = now + intervalMs;
        logged = 0;
      }
      if (logged < linesPerInterval) {
        logged++;
        return true;
      }
      suppressed++;
      if (timer === undefined) {
        timer = setTimeout(flush, intervalEndsAt - now);
        timer.unref();
      }
      return false;
    },
    flush,
  };
}
