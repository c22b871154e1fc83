// Counts kept in process and written in batches: one write at a time, every interval and on close.

export interface PeriodicFlush {
  /** Runs the write now, or joins the one running (single flight). */
  flush(): Promise<void>;
  /** Stops the timer, waits for a write in flight, then writes once more (shutdown). */
  close(): Promise<void>;
}

/** Calls `write` every `intervalMs` (the timer holds no process open), never two at once. */
export function periodicFlush(write: () => Promise<void>, intervalMs: number): PeriodicFlush {
  let flushing: Promise<void> | undefined;
  const flush = () =>
    (flushing ??= write().finally(() => {
      flushing = undefined;
    }));
  const timer = setInterval(() => void flush(), intervalMs);
  timer.unref();
  return {
    flush,
    async close() {
      clearInterval(timer);
      await flushing;
      await flush();
    },
  };
}
