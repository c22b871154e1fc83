// How far this replica's clock is from Redis's (TIME), read when metrics are scraped; said once in the log past a second.
import type { Logger } from 'pino';
import type { Clock } from '../time/clock.ts';
import type { RedisClient } from './connect.ts';

/** Past this, quota periods and usage days may differ from the other replicas' near a day's end: logged and alerted on. */
export const CLOCK_SKEW_WARN_SECONDS = 1;

export interface ClockSkewProbe {
  /** Redis's clock minus this replica's, in seconds (positive: this replica is behind); undefined when Redis did not answer. */
  read(): Promise<number | undefined>;
}

/**
 * One TIME per read, compared with the midpoint of this replica's clock before and after (the round trip halved). Off
 * the request path: the scrape asks. The first read past `CLOCK_SKEW_WARN_SECONDS` logs a warning; a read back
 * within it lets the next excursion log again.
 */
export function createClockSkewProbe(redis: RedisClient, clock: Clock, logger: Logger): ClockSkewProbe {
  let warned = false;
  return {
    async read() {
      const before = clock.now();
      // Typed as numbers; the replies are strings on the wire: Number() takes either.
      let reply: Array<number | string>;
      try {
        reply = await redis.time();
      } catch {
        return undefined;
      }
      const after = clock.now();
      const redisMs = Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000);
      const skewSeconds = (redisMs - (before + after) / 2) / 1000;
      const beyond = Math.abs(skewSeconds) > CLOCK_SKEW_WARN_SECONDS;
      if (beyond && !warned)
        logger.warn(
          { skewSeconds: Math.round(skewSeconds * 1000) / 1000 },
          "this replica's clock differs from Redis's by more than a second: quota days and months, usage days and sunsets may differ from the other replicas' (synchronise it with NTP)",
        );
      warned = beyond;
      return skewSeconds;
    },
  };
}
