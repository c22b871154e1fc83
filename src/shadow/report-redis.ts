// Every replica's shadow comparisons, added up in Redis: one script per flush, whatever the batch holds, each batch once.
import { BATCH_ID_KEPT_MS } from '../observability/once-batches.ts';
import { timed, type RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import type { Clock } from '../time/clock.ts';
import {
  BUCKET_MS,
  DIFFERENCE_KINDS,
  MAX_POINTERS,
  SHADOW_RESULTS,
  type LearntNoise,
  type PointerTally,
  type ShadowBucket,
  type ShadowCounts,
  type ShadowReportStore,
} from './report-model.ts';
import type { DifferenceKind, ShadowResult } from './shadow-outcome.ts';

const DAY_MS = 86_400_000;

/** `2026-11-28T22`: the hour a bucket's keys are named by. */
const hourName = (hour: number) => new Date(hour).toISOString().slice(0, 13);

/**
 * A HASH per hour and operation (`r|<result>` → comparisons, `d|c|<kind>|<pointer>` → comparisons differing there,
 * `d|f|…` and `d|l|…` → first and last seen, `d#` → pointers listed, the same under `n|` for noise, `u` → unlisted)
 * and a SET per hour of the operations compared, both expiring `retentionDays` after their hour; per operation a
 * HASH of the noise learnt (`k|c|<kind>|<pointer>`, `k|f|…`, `k|l|…`, `k|#`), expiring `retentionDays` after its last
 * sighting; a flush's batch id, kept `BATCH_ID_KEPT_MS`. The hash tag `{shadow}` keeps one Cluster slot: a flush is one
 * script. The learnt HASH may still hold a build-before's entries, kept by pointer alone (`c|<pointer>`, `f|`, `l|`,
 * `#`): read as noise of any kind. That build reads `c|` fields only, so it skips the `k|` entries this one writes.
 */
function shadowLayout(prefix: string) {
  const base = `${prefix}{shadow}:`;
  return {
    bucket: (hour: number, operation: string) => `${base}h:${hourName(hour)}:op:${operation}`,
    operations: (hour: number) => `${base}h:${hourName(hour)}:ops`,
    learnt: (operation: string) => `${base}noise:${operation}`,
    batch: (id: string) => `${base}batch:${id}`,
  };
}

/**
 * KEYS: the batch id's key, then each bucket's HASH and its hour's SET, then each operation's learnt-noise HASH
 * (`pointers` by kind under `k|`; `anyKind`, noise of any kind, under the build before's names).
 * ARGV[1]: the plan as JSON. Added only if the batch id was not there (SET NX in the same script: Redis runs it
 * whole or not at all), so a retry of a batch Redis already ran adds nothing. A list holding `cap` pointers takes no
 * new one: its occurrences are added to the bucket's `u` (unlisted) instead.
 */
const ADD_SHADOW = `
local plan = cjson.decode(ARGV[1])
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', plan.keep) then return 0 end
local function tally(hash, tag, name, count, first, last)
  local counted = tag .. 'c|' .. name
  if redis.call('HEXISTS', hash, counted) == 0 then
    if tonumber(redis.call('HGET', hash, tag .. '#') or '0') >= plan.cap then return false end
    redis.call('HINCRBY', hash, tag .. '#', 1)
    redis.call('HSET', hash, tag .. 'f|' .. name, first, tag .. 'l|' .. name, last)
  else
    if tonumber(redis.call('HGET', hash, tag .. 'f|' .. name)) > tonumber(first) then redis.call('HSET', hash, tag .. 'f|' .. name, first) end
    if tonumber(redis.call('HGET', hash, tag .. 'l|' .. name)) < tonumber(last) then redis.call('HSET', hash, tag .. 'l|' .. name, last) end
  end
  redis.call('HINCRBY', hash, counted, count)
  return true
end
local k = 1
for _, b in ipairs(plan.buckets) do
  local hash, operations = KEYS[k + 1], KEYS[k + 2]
  k = k + 2
  local unlisted = b.unlisted
  for result, n in pairs(b.results) do redis.call('HINCRBY', hash, 'r|' .. result, n) end
  for _, t in ipairs(b.differences) do
    if not tally(hash, 'd|', t[1], t[2], t[3], t[4]) then unlisted = unlisted + t[2] end
  end
  for _, t in ipairs(b.noise) do
    if not tally(hash, 'n|', t[1], t[2], t[3], t[4]) then unlisted = unlisted + t[2] end
  end
  if unlisted > 0 then redis.call('HINCRBY', hash, 'u', unlisted) end
  redis.call('PEXPIRE', hash, b.ttl)
  redis.call('SADD', operations, b.operation)
  redis.call('PEXPIRE', operations, b.ttl)
end
for _, l in ipairs(plan.learnt) do
  local hash = KEYS[k + 1]
  k = k + 1
  for _, t in ipairs(l.pointers) do tally(hash, 'k|', t[1], t[2], t[3], t[4]) end
  for _, t in ipairs(l.anyKind) do tally(hash, '', t[1], t[2], t[3], t[4]) end
  redis.call('PEXPIRE', hash, plan.learntTtl)
end
return 1
`;

type RedisWithAddShadow = RedisClient & { addShadowCounts(...keysThenPlan: string[]): Promise<number> };

/** Keys read at once in one pipeline. */
const READ_BATCH = 1000;

/** The replies of a pipeline, in order; a command that failed fails the whole (no reply is dropped). */
function repliesOf(results: Array<[Error | null, unknown]> | null, what: string): unknown[] {
  if (results === null) throw new Error(`${what}: the pipeline was discarded`);
  return results.map(([error, reply]) => {
    if (error) throw new Error(`${what}: ${error.message}`, { cause: error });
    return reply;
  });
}

async function readAll(redis: RedisClient, commands: string[][]): Promise<unknown[]> {
  const replies: unknown[] = [];
  for (let start = 0; start < commands.length; start += READ_BATCH)
    replies.push(...repliesOf(await redis.pipeline(commands.slice(start, start + READ_BATCH)).exec(), 'the shadow report could not be read'));
  return replies;
}

/** A tally as the script takes it: [kind|pointer, count, first, last] (times as text: Lua's numbers print them whole). */
const planned = (tally: PointerTally) => [`${tally.kind}|${tally.pointer}`, tally.count, String(tally.firstSeen), String(tally.lastSeen)];

export interface RedisShadowReportStoreOptions {
  keyPrefix: string;
  clock: Clock;
  /** Days kept after each hour (config `shadow.report.retentionDays`). */
  retentionDays: number;
  observe?: RedisCommandObserver;
}

export class RedisShadowReportStore implements ShadowReportStore {
  readonly #redis: RedisClient;
  readonly #layout: ReturnType<typeof shadowLayout>;
  readonly #options: RedisShadowReportStoreOptions;

  constructor(redis: RedisClient, options: RedisShadowReportStoreOptions) {
    // The number of keys varies with the batch: given with each call.
    if (!('addShadowCounts' in redis)) redis.defineCommand('addShadowCounts', { lua: ADD_SHADOW });
    this.#redis = redis;
    this.#layout = shadowLayout(options.keyPrefix);
    this.#options = options;
  }

  async add(counts: ShadowCounts, batchId: string): Promise<void> {
    const layout = this.#layout;
    const now = this.#options.clock.now();
    const keptMs = this.#options.retentionDays * DAY_MS;
    const keys = [layout.batch(batchId)];
    // Relative expiries, from the gateway's clock: whatever Redis's own clock says, an hour lives its retention.
    // An hour already past it (a batch retried for long) is not written: it would only expire at once.
    const buckets = counts.buckets
      .filter((bucket) => bucket.hour + BUCKET_MS + keptMs - now > 0)
      .map((bucket) => {
        keys.push(layout.bucket(bucket.hour, bucket.operation), layout.operations(bucket.hour));
        return {
          operation: bucket.operation,
          ttl: bucket.hour + BUCKET_MS + keptMs - now,
          results: bucket.results,
          differences: bucket.differences.map(planned),
          noise: bucket.noise.map(planned),
          unlisted: bucket.unlisted,
        };
      });
    const byOperation = new Map<string, LearntNoise[]>();
    for (const sighting of counts.learnt) byOperation.set(sighting.operation, [...(byOperation.get(sighting.operation) ?? []), sighting]);
    const learnt = [...byOperation].map(([operation, sightings]) => {
      keys.push(layout.learnt(operation));
      // noteNoise gives every sighting its kind; one without (any kind) keeps the build before's field names.
      const times = (sighting: LearntNoise) => [sighting.sightings, String(sighting.firstSeen), String(sighting.lastSeen)];
      return {
        pointers: sightings.flatMap((sighting) => (sighting.kind === undefined ? [] : [[`${sighting.kind}|${sighting.pointer}`, ...times(sighting)]])),
        anyKind: sightings.flatMap((sighting) => (sighting.kind === undefined ? [[sighting.pointer, ...times(sighting)]] : [])),
      };
    });
    const plan = JSON.stringify({ keep: BATCH_ID_KEPT_MS, cap: MAX_POINTERS, learntTtl: keptMs, buckets, learnt });
    await timed(this.#options.observe, () => (this.#redis as RedisWithAddShadow).addShadowCounts(String(keys.length), ...keys, plan));
  }

  async read(hours: readonly number[], operation?: string): Promise<ShadowCounts> {
    const layout = this.#layout;
    const compared = await readAll(
      this.#redis,
      hours.map((hour) => ['smembers', layout.operations(hour)]),
    );
    const wanted = hours.flatMap((hour, index) =>
      (compared[index] as string[]).filter((name) => operation === undefined || name === operation).map((name): [number, string] => [hour, name]),
    );
    const operations = [...new Set(wanted.map(([, name]) => name))].sort();
    const replies = await readAll(this.#redis, [
      ...wanted.map(([hour, name]) => ['hgetall', layout.bucket(hour, name)]),
      ...operations.map((name) => ['hgetall', layout.learnt(name)]),
    ]);
    return {
      buckets: wanted.map(([hour, name], index) => bucketOf(hour, name, replies[index] as Record<string, string>)),
      learnt: operations.flatMap((name, index) => learntOf(name, replies[wanted.length + index] as Record<string, string>)),
    };
  }
}

/** `kind|pointer` as the script's field names carry it; undefined for a kind this version does not know. */
function splitName(name: string): { kind: DifferenceKind; pointer: string } | undefined {
  const separator = name.indexOf('|');
  const kind = name.slice(0, separator);
  if (separator < 0 || !(DIFFERENCE_KINDS as readonly string[]).includes(kind)) return undefined;
  return { kind: kind as DifferenceKind, pointer: name.slice(separator + 1) };
}

/** One hour's HASH of one operation as a bucket. */
function bucketOf(hour: number, operation: string, fields: Record<string, string>): ShadowBucket {
  const bucket: ShadowBucket = { hour, operation, results: {}, differences: [], noise: [], unlisted: Number(fields.u ?? 0) };
  for (const result of SHADOW_RESULTS) if (fields[`r|${result}`] !== undefined) bucket.results[result as ShadowResult] = Number(fields[`r|${result}`]);
  for (const [tag, list] of [
    ['d', bucket.differences],
    ['n', bucket.noise],
  ] as const) {
    for (const [field, count] of Object.entries(fields)) {
      if (!field.startsWith(`${tag}|c|`)) continue;
      const name = field.slice(4);
      const split = splitName(name);
      if (split === undefined) continue;
      list.push({ ...split, count: Number(count), firstSeen: Number(fields[`${tag}|f|${name}`]), lastSeen: Number(fields[`${tag}|l|${name}`]) });
    }
  }
  return bucket;
}

/**
 * One operation's learnt-noise HASH as sightings: `k|c|<kind>|<pointer>` by kind, and `c|<pointer>` (written by a build
 * that kept no kind) with none, noise of any kind at its pointer. A kind this version does not know is skipped.
 */
function learntOf(operation: string, fields: Record<string, string>): LearntNoise[] {
  const learnt: LearntNoise[] = [];
  for (const [field, count] of Object.entries(fields)) {
    if (field.startsWith('k|c|')) {
      const name = field.slice(4);
      const split = splitName(name);
      if (split === undefined) continue;
      learnt.push({ operation, ...split, sightings: Number(count), firstSeen: Number(fields[`k|f|${name}`]), lastSeen: Number(fields[`k|l|${name}`]) });
    } else if (field.startsWith('c|')) {
      const pointer = field.slice(2);
      learnt.push({ operation, pointer, sightings: Number(count), firstSeen: Number(fields[`f|${pointer}`]), lastSeen: Number(fields[`l|${pointer}`]) });
    }
  }
  return learnt;
}
