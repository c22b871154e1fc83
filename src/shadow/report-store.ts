// The shadow report: outcomes counted in process by hour and operation, added to a shared store in batches, read with noise apart.
import type { Logger } from 'pino';
import { onceBatches } from '../observability/once-batches.ts';
import { periodicFlush } from '../observability/periodic-flush.ts';
import type { RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import type { Clock } from '../time/clock.ts';
import {
  assembleReport,
  BUCKET_MS,
  DIFFERENCE_KINDS,
  hoursOf,
  MAX_POINTER_LENGTH,
  MAX_POINTERS,
  mergeCapped,
  SHADOW_RESULTS,
  type LearntNoise,
  type PointerTally,
  type ShadowBucket,
  type ShadowCounts,
  type ShadowReportBody,
  type ShadowReportQuery,
  type ShadowReportStore,
} from './report-model.ts';
import type { ShadowReportReader } from './report-query.ts';
import { RedisShadowReportStore, type RedisShadowReportStoreOptions } from './report-redis.ts';
import type { NoiseSighting, ShadowDifference, ShadowOutcome, ShadowOutcomeSink } from './shadow-outcome.ts';

const DAY_MS = 86_400_000;

/** The report as the gateway holds it: where comparisons go (never throwing, no round trip), and what the admin API reads. */
export interface ShadowReport extends ShadowOutcomeSink, ShadowReportReader {
  /** This replica's counts flushed first, then the report across replicas. */
  read(query: ShadowReportQuery): Promise<ShadowReportBody>;
  /** Writes what was counted since the last flush (single flight); a failed batch is sent again, as it was, first. */
  flush(): Promise<void>;
  /** Stops the timer and flushes once more (shutdown). */
  close(): Promise<void>;
}

export interface ShadowReportOptions {
  clock: Clock;
  /** Days kept after each hour (config `shadow.report.retentionDays`). */
  retentionDays: number;
  /** How often counts are written to the store (config `shadow.report.flushIntervalMs`); what a crash can lose. */
  flushIntervalMs: number;
  logger?: Logger;
}

export interface RedisShadowReportOptions extends ShadowReportOptions {
  /** The gateway's Redis key prefix (`redis.keyPrefix`). */
  keyPrefix: string;
  /** Told how each flush's script went (the Redis command metrics); reads for reports are not timed. */
  observe?: RedisCommandObserver;
}

/** The report on the gateway's Redis: every replica adds into the same hourly keys, kept `retentionDays`. */
export function createRedisShadowReport(redis: RedisClient, options: RedisShadowReportOptions): ShadowReport {
  const store = new RedisShadowReportStore(redis, {
    keyPrefix: options.keyPrefix,
    clock: options.clock,
    retentionDays: options.retentionDays,
    ...(options.observe ? { observe: options.observe } : {}),
  });
  return createShadowReport(store, options);
}

/**
 * The report read from Redis alone, as every replica wrote it: what the admin API and the CLI read with. It counts
 * nothing itself (the replica's own ShadowReport writes), so it needs no timer and nothing to close.
 */
export function redisShadowReportReader(redis: RedisClient, options: Omit<RedisShadowReportStoreOptions, 'observe'>): ShadowReportReader {
  const store = new RedisShadowReportStore(redis, options);
  return {
    retentionDays: options.retentionDays,
    now: () => options.clock.now(),
    read: async (query) => assembleReport(await store.read(hoursOf(query.from, query.to), query.operation), query),
  };
}

/** The report of a gateway without Redis (the demo, in-process tests): this process's counts, kept as long as it runs. */
export function createMemoryShadowReport(options: ShadowReportOptions): ShadowReport {
  return createShadowReport(new MemoryShadowReportStore(options.clock, options.retentionDays), options);
}

interface PendingBucket {
  hour: number;
  operation: string;
  results: Record<string, number>;
  differences: Map<string, PointerTally>;
  noise: Map<string, PointerTally>;
  unlisted: number;
}

/** Learnt noise is kept by pointer and kind: `value` noise and `extra` noise at one pointer are two entries. */
const learntKey = ({ pointer, kind }: { pointer: string; kind?: string | undefined }) => (kind === undefined ? pointer : `${kind}|${pointer}`);

/** One tally per kind and pointer of a comparison: a pointer counts the comparisons it differed in, not its array elements. */
function tallies(differences: readonly ShadowDifference[], at: number): PointerTally[] {
  const seen = new Map<string, PointerTally>();
  for (const { pointer, kind } of differences) {
    if (!(DIFFERENCE_KINDS as readonly string[]).includes(kind) || typeof pointer !== 'string') continue;
    seen.set(`${kind}|${pointer}`, { pointer, kind, count: 1, firstSeen: at, lastSeen: at });
  }
  return [...seen.values()];
}

/**
 * Counts by hour and operation in memory, flushed every `flushIntervalMs` as batches with an id
 * (src/observability/once-batches.ts): a batch whose answer was lost (a timeout while Redis stalled) is sent again
 * under its id and added once. Bounded as the store is: MAX_POINTERS a list, the rest counted as unlisted.
 */
export function createShadowReport(store: ShadowReportStore, options: ShadowReportOptions): ShadowReport {
  const { clock, logger, retentionDays } = options;
  let buckets = new Map<string, PendingBucket>();
  let learnt = new Map<string, Map<string, LearntNoise>>();

  const write = onceBatches<ShadowCounts>({
    clock,
    take() {
      if (buckets.size === 0 && learnt.size === 0) return undefined;
      const counts: ShadowCounts = {
        buckets: [...buckets.values()].map(
          (bucket): ShadowBucket => ({
            hour: bucket.hour,
            operation: bucket.operation,
            results: bucket.results,
            differences: [...bucket.differences.values()],
            noise: [...bucket.noise.values()],
            unlisted: bucket.unlisted,
          }),
        ),
        learnt: [...learnt.values()].flatMap((pointers) => [...pointers.values()]),
      };
      buckets = new Map();
      learnt = new Map();
      return counts;
    },
    send: (id, counts) => store.add(counts, id),
    onFailure(error, givenUp) {
      if (givenUp) logger?.error({ err: error }, 'could not write shadow report counts for too long: the batch is dropped');
      else logger?.warn({ err: error, pending: buckets.size }, 'could not write shadow report counts: the batch is sent again at the next flush');
    },
  });
  const { flush, close } = periodicFlush(write, options.flushIntervalMs);

  function bucketOf(operation: string, at: number): PendingBucket {
    const hour = Math.floor(at / BUCKET_MS) * BUCKET_MS;
    const key = `${hour}\n${operation}`;
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = { hour, operation, results: {}, differences: new Map(), noise: new Map(), unlisted: 0 };
      buckets.set(key, bucket);
    }
    return bucket;
  }

  function record(outcome: ShadowOutcome): void {
    if (!(SHADOW_RESULTS as readonly string[]).includes(outcome.result) || !Number.isFinite(outcome.at)) return;
    const bucket = bucketOf(outcome.operation, outcome.at);
    bucket.results[outcome.result] = (bucket.results[outcome.result] ?? 0) + 1;
    for (const tally of tallies(outcome.differences, outcome.at)) if (!mergeCapped(bucket.differences, tally)) bucket.unlisted++;
    for (const tally of tallies(outcome.noise, outcome.at)) if (!mergeCapped(bucket.noise, tally)) bucket.unlisted++;
  }

  function noteNoise({ operation, pointer, kind, at }: NoiseSighting): void {
    if (!Number.isFinite(at) || typeof pointer !== 'string' || pointer.length > MAX_POINTER_LENGTH) return;
    if (!(DIFFERENCE_KINDS as readonly string[]).includes(kind)) return;
    let pointers = learnt.get(operation);
    if (pointers === undefined) {
      pointers = new Map();
      learnt.set(operation, pointers);
    }
    const key = learntKey({ pointer, kind });
    const existing = pointers.get(key);
    if (existing !== undefined) {
      existing.sightings++;
      existing.firstSeen = Math.min(existing.firstSeen, at);
      existing.lastSeen = Math.max(existing.lastSeen, at);
    } else if (pointers.size < MAX_POINTERS) pointers.set(key, { operation, pointer, kind, sightings: 1, firstSeen: at, lastSeen: at });
  }

  return {
    retentionDays,
    now: () => clock.now(),
    // On the comparison's path: map updates only. A fault here must never reach the shadow sender, let alone a request.
    record(outcome) {
      try {
        record(outcome);
      } catch (error) {
        logger?.error({ err: error }, 'could not count a shadow comparison');
      }
    },
    noteNoise(sighting) {
      try {
        noteNoise(sighting);
      } catch (error) {
        logger?.error({ err: error }, 'could not count a noise sighting');
      }
    },
    async read(query) {
      await flush();
      return assembleReport(await store.read(hoursOf(query.from, query.to), query.operation), query);
    },
    flush,
    close,
  };
}

/** The counts of one process, bounded as Redis's are; hours older than the retention are dropped as new ones come. */
export class MemoryShadowReportStore implements ShadowReportStore {
  readonly #buckets = new Map<string, PendingBucket>();
  readonly #learnt = new Map<string, Map<string, LearntNoise>>();
  readonly #clock: Clock;
  readonly #keptMs: number;

  constructor(clock: Clock, retentionDays: number) {
    this.#clock = clock;
    this.#keptMs = retentionDays * DAY_MS;
  }

  async add(counts: ShadowCounts, _batchId: string): Promise<void> {
    // In process a write always has its answer: no batch is ever sent twice.
    const now = this.#clock.now();
    for (const [key, bucket] of this.#buckets) if (bucket.hour + BUCKET_MS + this.#keptMs <= now) this.#buckets.delete(key);
    for (const added of counts.buckets) {
      const key = `${added.hour}\n${added.operation}`;
      let bucket = this.#buckets.get(key);
      if (bucket === undefined) {
        bucket = { hour: added.hour, operation: added.operation, results: {}, differences: new Map(), noise: new Map(), unlisted: 0 };
        this.#buckets.set(key, bucket);
      }
      for (const [result, count] of Object.entries(added.results)) bucket.results[result] = (bucket.results[result] ?? 0) + count;
      bucket.unlisted += added.unlisted;
      for (const tally of added.differences) if (!mergeCapped(bucket.differences, tally)) bucket.unlisted += tally.count;
      for (const tally of added.noise) if (!mergeCapped(bucket.noise, tally)) bucket.unlisted += tally.count;
    }
    for (const sighting of counts.learnt) {
      let pointers = this.#learnt.get(sighting.operation);
      if (pointers === undefined) {
        pointers = new Map();
        this.#learnt.set(sighting.operation, pointers);
      }
      const key = learntKey(sighting);
      const existing = pointers.get(key);
      if (existing !== undefined) {
        existing.sightings += sighting.sightings;
        existing.firstSeen = Math.min(existing.firstSeen, sighting.firstSeen);
        existing.lastSeen = Math.max(existing.lastSeen, sighting.lastSeen);
      } else if (pointers.size < MAX_POINTERS) pointers.set(key, { ...sighting });
    }
  }

  async read(hours: readonly number[], operation?: string): Promise<ShadowCounts> {
    const wanted = new Set(hours);
    const now = this.#clock.now();
    const buckets = [...this.#buckets.values()]
      .filter(
        (bucket) => wanted.has(bucket.hour) && (operation === undefined || bucket.operation === operation) && bucket.hour + BUCKET_MS + this.#keptMs > now,
      )
      .map(
        (bucket): ShadowBucket => ({
          hour: bucket.hour,
          operation: bucket.operation,
          results: { ...bucket.results },
          differences: [...bucket.differences.values()].map((tally) => ({ ...tally })),
          noise: [...bucket.noise.values()].map((tally) => ({ ...tally })),
          unlisted: bucket.unlisted,
        }),
      );
    const operations = new Set(buckets.map((bucket) => bucket.operation));
    const learnt = [...operations].flatMap((name) =>
      [...(this.#learnt.get(name)?.values() ?? [])].filter((sighting) => sighting.lastSeen + this.#keptMs > now).map((sighting) => ({ ...sighting })),
    );
    return { buckets, learnt };
  }
}
