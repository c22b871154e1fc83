// Times the Redis commands the stores send and says whether each failed, for the metrics; the stores know nothing of Prometheus.

/** One kind per store operation, a closed set bounding the `command` label (`rate_limit_increment`: one per key per turn or sync). */
export const REDIS_COMMAND_KINDS = ['key_lookup', 'rate_limit_increment', 'report_flush'] as const;
export type RedisCommandKind = (typeof REDIS_COMMAND_KINDS)[number];

/** Told once per command as it settles: seconds from sending it to its reply (or failure), and whether it failed. */
export type RedisCommandObserver = (seconds: number, failed: boolean) => void;

/** Runs `command`, telling `observe` how long it took and whether it failed; without an observer, no clock read, no extra promise. */
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
