// Every replica's usage counts, added up in Redis: one transaction per flush, whatever the batch holds.
import { timed, type RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import { periodAt, QUOTA_PERIODS } from '../policy/quota-periods.ts';
import type { Clock } from '../time/clock.ts';
import { daysBetween } from './usage-report.ts';
import { USAGE_OUTCOMES, type NearLimitCounts, type NearLimitKeys, type UsageCount, type UsageOutcome, type UsageStore } from './usage.ts';

/**
 * A HASH per UTC day and key (`operation|outcome` → calls) and a SET per day of the keys that called, both expiring
 * `retentionDays` after their day; the consumers' names in one HASH; per quota period, a SET of the keys seen near
 * a limit. The hash tag `{usage}` keeps one Cluster slot: a flush is one MULTI.
 */
function usageLayout(prefix: string) {
  const base = `${prefix}{usage}:`;
  return {
    day: (day: string, keyId: string) => `${base}day:${day}:${keyId}`,
    dayKeys: (day: string) => `${base}day:${day}:keys`,
    consumers: `${base}consumers`,
    nearLimit: (period: string, name: string) => `${base}near:${period}:${name}`,
  };
}

/** Keys read at once when a report covers every key. */
const READ_BATCH = 1000;

const DAY_MS = 86_400_000;

/** The replies of a transaction or pipeline, in order; a command that failed fails the whole (no reply is dropped). */
function repliesOf(results: Array<[Error | null, unknown]> | null, what: string): unknown[] {
  if (results === null) throw new Error(`${what}: the transaction was discarded`);
  return results.map(([error, reply]) => {
    if (error) throw new Error(`${what}: ${error.message}`, { cause: error });
    return reply;
  });
}

export interface RedisUsageStoreOptions {
  keyPrefix: string;
  clock: Clock;
  /** Days kept after each day (config `usage.retentionDays`). */
  retentionDays: number;
  /** Told how each flush's transaction went (the Redis command metrics); reads for reports are not timed. */
  observe?: RedisCommandObserver;
}

export class RedisUsageStore implements UsageStore {
  readonly #redis: RedisClient;
  readonly #layout: ReturnType<typeof usageLayout>;
  readonly #options: RedisUsageStoreOptions;

  constructor(redis: RedisClient, options: RedisUsageStoreOptions) {
    this.#redis = redis;
    this.#layout = usageLayout(options.keyPrefix);
    this.#options = options;
  }

  async add(batch: readonly UsageCount[], nearLimit: NearLimitKeys): Promise<NearLimitCounts> {
    const layout = this.#layout;
    const now = this.#options.clock.now();
    // Relative expiries, from the gateway's clock: whatever Redis's own clock says, a day lives its retention.
    const keptFor = (day: string) => periodAt('day', Date.parse(`${day}T00:00:00Z`)).endsAt + this.#options.retentionDays * DAY_MS - now;
    const transaction = this.#redis.multi();
    const consumers: Record<string, string> = {};
    for (const count of batch) {
      const key = layout.day(count.day, count.keyId);
      for (const outcome of USAGE_OUTCOMES) if (count[outcome] > 0) transaction.hincrby(key, `${count.operation}|${outcome}`, count[outcome]);
      transaction.pexpire(key, keptFor(count.day)).sadd(layout.dayKeys(count.day), count.keyId).pexpire(layout.dayKeys(count.day), keptFor(count.day));
      consumers[count.keyId] = count.consumer;
    }
    if (batch.length > 0) transaction.hset(layout.consumers, consumers);
    for (const period of QUOTA_PERIODS) {
      const { period: name, keyIds } = nearLimit[period];
      const key = layout.nearLimit(period, name);
      if (keyIds.size > 0) transaction.sadd(key, ...keyIds).pexpire(key, periodAt(period, now).endsAt + DAY_MS - now);
      transaction.scard(key);
    }
    const replies = await timed(this.#options.observe, async () => repliesOf(await transaction.exec(), 'usage counts were not written'));
    const [day, month] = replies.slice(-2) as [number, number];
    return { day, month };
  }

  async read(from: string, to: string, keyId?: string): Promise<UsageCount[]> {
    const layout = this.#layout;
    const days = daysBetween(from, to);
    let wanted: Array<[string, string]>;
    if (keyId !== undefined) wanted = days.map((day) => [day, keyId]);
    else {
      const members = repliesOf(await this.#redis.pipeline(days.map((day) => ['smembers', layout.dayKeys(day)])).exec(), 'usage could not be read');
      wanted = days.flatMap((day, index) => (members[index] as string[]).sort().map((id): [string, string] => [day, id]));
    }
    const counts: UsageCount[] = [];
    for (let start = 0; start < wanted.length; start += READ_BATCH) {
      const part = wanted.slice(start, start + READ_BATCH);
      const ids = [...new Set(part.map(([, id]) => id))];
      const replies = repliesOf(
        await this.#redis.pipeline([...part.map(([day, id]) => ['hgetall', layout.day(day, id)]), ['hmget', layout.consumers, ...ids]]).exec(),
        'usage could not be read',
      );
      const names = new Map(ids.map((id, index) => [id, ((replies.at(-1) as Array<string | null>)[index] ?? '') as string]));
      for (const [index, [day, id]] of part.entries()) counts.push(...countsOf(day, id, names.get(id) ?? '', replies[index] as Record<string, string>));
    }
    return counts;
  }
}

/** One day's HASH of one key as counts by operation. */
function countsOf(day: string, keyId: string, consumer: string, fields: Record<string, string>): UsageCount[] {
  const byOperation = new Map<string, UsageCount>();
  for (const [field, value] of Object.entries(fields)) {
    const separator = field.lastIndexOf('|');
    const operation = field.slice(0, separator);
    const outcome = field.slice(separator + 1) as UsageOutcome;
    if (!(USAGE_OUTCOMES as readonly string[]).includes(outcome)) continue;
    let count = byOperation.get(operation);
    if (count === undefined) {
      count = { day, keyId, operation, consumer, admitted: 0, refusedQuota: 0, refusedRateLimit: 0 };
      byOperation.set(operation, count);
    }
    count[outcome] = Number(value);
  }
  return [...byOperation.values()];
}
