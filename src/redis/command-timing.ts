// Times the Redis commands the stores send and says whether each failed, for the metrics; the stores know nothing of Prometheus.

/**
 * What a timed command did for the gateway, one kind per store operation: a closed set, so the metrics'
 * `command` label is bounded. `rate_limit_increment` is one command per key per event-loop turn in exact
 * mode (however many requests it counts) and one per key per synchronisation in local-first mode.
 */
export const REDIS_COMMAND_KINDS = ['key_lookup', 'rate_limit_increment', 'report_flush'] as const;
export type RedisCommandKind = (typeof REDIS_COMMAND_KINDS)[number];

/** Told once per command as it settles: seconds from sending it to its reply (or failure), and whether it failed. */
export type RedisCommandObserver = (seconds: number, failed: boolean) => void;

/**
 * Runs `command` and tells `observe` how long it took and whether it failed; its result or error is passed
 * on unchanged. Without an observer the command runs as it would have (no clock read, no extra promise).
 */
export function timed<T>(observe: RedisCommandObserver | undefined, command: () => Promise<T>): Promise<T> {
  if (observe === undefined) return command();
  const started = performance.now();
  return command().then(
    (value) => {
      observe((performance.now() - started) / 1000, false);
      return value;
    },
    (error: unknown) => {
      observe((performance.now() - started) / 1000, true);
      throw error;
    },
  );
}
