// Every replica's usage counts, added up in Redis: one script per flush, whatever the batch holds, each batch once.
import { timed, type RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import { periodAt, QUOTA_PERIODS } from '../limits/quota-periods.ts';
import type { Clock } from '../time/clock.ts';
import { BATCH_ID_KEPT_MS } from './once-batches.ts';
import { daysBetween } from './usage-report.ts';
import { USAGE_OUTCOMES, type NearLimitCounts, type NearLimitKeys, type UsageCount, type UsageOutcome, type UsageStore } from './usage.ts';

/**
 * A HASH per UTC day and key (`operation|outcome` → calls) and a SET per day of the keys that called, both expiring
 * `retentionDays` after their day; the consumers' names in one HASH; per quota period, a SET of the keys seen near
 * a limit; a flush's batch id, kept `BATCH_ID_KEPT_MS`. The hash tag `{usage}` keeps one Cluster slot: a flush is one script.
 */
function usageLayout(prefix: string) {
  const base = `${prefix}{usage}:`;
  return {
    day: (day: string, keyId: string) => `${base}day:${day}:${keyId}`,
    dayKeys: (day: string) => `${base}day:${day}:keys`,
    consumers: `${base}consumers`,
    nearLimit: (period: string, name: string) => `${base}near:${period}:${name}`,
    batch: (id: string) => `${base}batch:${id}`,
  };
}

/**
 * KEYS: the batch id's key, the consumers' HASH, the day's and the month's near-limit SETs, then each count's day
 * HASH and day SET. ARGV[1]: the plan as JSON. The counts are added only if the batch id was not there (SET NX in
 * the same script: Redis runs it whole or not at all), so a retry of a batch Redis already ran adds nothing; the
 * near-limit SETs are idempotent and answer the gauge either way.
 */
const ADD_USAGE = `
local plan = cjson.decode(ARGV[1])
if #plan.counts == 0 or redis.call('SET', KEYS[1], '1', 'NX', 'PX', plan.keep) then
  for i, count in ipairs(plan.counts) do
    local day, keys = KEYS[3 + 2 * i], KEYS[4 + 2 * i]
    for field, calls in pairs(count.add) do redis.call('HINCRBY', day, field, calls) end
    redis.call('PEXPIRE', day, count.ttl)
    redis.call('SADD', keys, count.keyId)
    redis.call('PEXPIRE', keys, count.ttl)
    redis.call('HSET', KEYS[2], count.keyId, count.consumer)
  end
end
for i, near in ipairs(plan.near) do
  if #near.keyIds > 0 then
    redis.call('SADD', KEYS[2 + i], unpack(near.keyIds))
    redis.call('PEXPIRE', KEYS[2 + i], near.ttl)
  end
end
return {redis.call('SCARD', KEYS[3]), redis.call('SCARD', KEYS[4])}
`;

type RedisWithAddUsage = RedisClient & { addUsage(...keysThenPlan: string[]): Promise<[number, number]> };

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
    // The number of keys varies with the batch: given with each call.
    if (!('addUsage' in redis)) redis.defineCommand('addUsage', { lua: ADD_USAGE });
    this.#redis = redis;
    this.#layout = usageLayout(options.keyPrefix);
    this.#options = options;
  }

  async add(batch: readonly UsageCount[], nearLimit: NearLimitKeys, batchId: string): Promise<NearLimitCounts> {
    const layout = this.#layout;
    const now = this.#options.clock.now();
    // Relative expiries, from the gateway's clock: whatever Redis's own clock says, a day lives its retention.
    const keptFor = (day: string) => periodAt('day', Date.parse(`${day}T00:00:00Z`)).endsAt + this.#options.retentionDays * DAY_MS - now;
    const keys = [layout.batch(batchId), layout.consumers];
    const near = QUOTA_PERIODS.map((period) => {
      const { period: name, keyIds } = nearLimit[period];
      keys.push(layout.nearLimit(period, name));
      return { keyIds: [...keyIds], ttl: periodAt(period, now).endsAt + DAY_MS - now };
    });
    const counts = batch.map((count) => {
      keys.push(layout.day(count.day, count.keyId), layout.dayKeys(count.day));
      const add: Record<string, number> = {};
      for (const outcome of USAGE_OUTCOMES) if (count[outcome] > 0) add[`${count.operation}|${outcome}`] = count[outcome];
      return { keyId: count.keyId, consumer: count.consumer, ttl: keptFor(count.day), add };
    });
    const plan = JSON.stringify({ keep: BATCH_ID_KEPT_MS, near, counts });
    const [day, month] = await timed(this.#options.observe, () => (this.#redis as RedisWithAddUsage).addUsage(String(keys.length), ...keys, plan));
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
