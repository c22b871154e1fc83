// Each consumer's calls per UTC day and operation: counted in process at completion, added to a shared store in batches.
import type { Logger } from 'pino';
import type { RateLimitFacts } from '../limits/rate-limit.ts';
import { periodAt, QUOTA_PERIODS, type QuotaPeriod } from '../limits/quota-periods.ts';
import type { Clock } from '../time/clock.ts';
import { onceBatches } from './once-batches.ts';
import { periodicFlush } from './periodic-flush.ts';

/** What happened to a counted call (the names of the API's and the CLI's columns: an interface). */
export const USAGE_OUTCOMES = ['admitted', 'refusedQuota', 'refusedRateLimit'] as const;
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number];

export type UsageCounts = Record<UsageOutcome, number>;

/** One key's calls to one operation on one UTC day. */
export interface UsageCount extends UsageCounts {
  day: string;
  keyId: string;
  operation: string;
  /** The key's consumer when last seen. */
  consumer: string;
}

/** Keys whose use of a quota is at or past this share of it count as near their limit. */
export const NEAR_LIMIT_SHARE = 0.8;

/** The keys near a quota's limit seen since the last flush, by period and the period's name (`2026-11-26`, `2026-11`). */
export type NearLimitKeys = Record<QuotaPeriod, { period: string; keyIds: ReadonlySet<string> }>;

/** How many keys are near a quota's limit in the current periods, across replicas. */
export type NearLimitCounts = Record<QuotaPeriod, number>;

/** Where every replica's counts add up: Redis in production (src/observability/redis-usage-store.ts). */
export interface UsageStore {
  /**
   * Adds a batch, and the keys seen near their limits; answers how many keys are near them now, across replicas.
   * A batch whose `batchId` the store has already added adds nothing again (a retry of an unanswered write).
   */
  add(batch: readonly UsageCount[], nearLimit: NearLimitKeys, batchId: string): Promise<NearLimitCounts>;
  /** Every count of the days from `from` to `to` (UTC, `YYYY-MM-DD`, both included), of one key or of all. */
  read(from: string, to: string, keyId?: string): Promise<UsageCount[]>;
}

/**
 * What the rate-limit stage decided, as usage: undefined for a call it never reached (refused before: 401, 404) or
 * refused for a failing store (`deny`). One it let through while Redis could not count (`allow`) was served: admitted.
 */
export function usageOutcomeOf(facts: Pick<RateLimitFacts, 'rateLimitOutcome' | 'onStoreError'>): UsageOutcome | undefined {
  switch (facts.rateLimitOutcome) {
    case 'allowed':
      return 'admitted';
    case 'store_unavailable':
      return facts.onStoreError === 'allow' ? 'admitted' : undefined;
    case 'quota_exceeded':
      return 'refusedQuota';
    case 'limited':
      return 'refusedRateLimit';
    default:
      return undefined;
  }
}

const emptyCounts = (): UsageCounts => ({ admitted: 0, refusedQuota: 0, refusedRateLimit: 0 });

function merge(into: Map<string, UsageCount>, count: UsageCount): void {
  const key = `${count.day}\n${count.keyId}\n${count.operation}`;
  const existing = into.get(key);
  if (!existing) {
    into.set(key, { ...count });
    return;
  }
  for (const outcome of USAGE_OUTCOMES) existing[outcome] += count[outcome];
  existing.consumer = count.consumer;
}

/** The store of a gateway without Redis (the demo, in-process tests): one process's counts, kept as long as it runs. */
export class MemoryUsageStore implements UsageStore {
  readonly #counts = new Map<string, UsageCount>();
  readonly #nearLimit = new Map<string, Set<string>>();

  async add(batch: readonly UsageCount[], nearLimit: NearLimitKeys, _batchId: string): Promise<NearLimitCounts> {
    // In process a write always has its answer: no batch is ever sent twice.
    for (const count of batch) merge(this.#counts, count);
    const counts = {} as NearLimitCounts;
    for (const period of QUOTA_PERIODS) {
      const name = `${period}:${nearLimit[period].period}`;
      const keys = this.#nearLimit.get(name) ?? new Set();
      this.#nearLimit.set(name, keys);
      for (const keyId of nearLimit[period].keyIds) keys.add(keyId);
      counts[period] = keys.size;
    }
    return counts;
  }

  async read(from: string, to: string, keyId?: string): Promise<UsageCount[]> {
    return [...this.#counts.values()]
      .filter((count) => count.day >= from && count.day <= to && (keyId === undefined || count.keyId === keyId))
      .map((count) => ({ ...count }));
  }
}

export interface UsageRecorderOptions {
  store: UsageStore;
  clock: Clock;
  /** How often the counts are written to the store; what a crash can lose. */
  flushIntervalMs: number;
  /** Told after each flush how many keys are near a quota's limit, across replicas (the gauge). */
  onNearLimit?: (counts: NearLimitCounts) => void;
  logger?: Logger;
}

/** The request's facts usage reads at completion. */
export interface CountedCall extends Pick<RateLimitFacts, 'rateLimitOutcome' | 'onStoreError' | 'quota'> {
  caller?: { keyId: string; name: string } | undefined;
  route?: { operation: { id: string } } | undefined;
}

export interface UsageRecorder {
  /** On the request path (at completion): a map update, never a store round trip. */
  record(call: CountedCall): void;
  /** Writes what was counted since the last flush (single flight); a failed batch is sent again, as it was, first. */
  flush(): Promise<void>;
  /** Stops the timer and flushes once more. */
  close(): Promise<void>;
}

/**
 * Counts per day, key and operation in memory, flushed every `flushIntervalMs` as batches with an id
 * (src/observability/once-batches.ts): a failed batch is sent again under its id, never merged into the next, so a
 * write whose answer was lost (a timeout while Redis stalled) is added once. Lost only: what a crash finds unwritten.
 */
export function createUsageRecorder(options: UsageRecorderOptions): UsageRecorder {
  const { store, clock, logger } = options;
  // By day, key id and operation: three look-ups of strings whose hashes V8 keeps, not one of a string made per request.
  let pending = new Map<string, Map<string, Map<string, UsageCount>>>();
  let pendingCounts = 0;
  let nearLimit = new Map<string, Set<string>>();

  function nearLimitNow(now: number): NearLimitKeys {
    const keys = {} as NearLimitKeys;
    for (const period of QUOTA_PERIODS) {
      const name = periodAt(period, now).name;
      keys[period] = { period: name, keyIds: nearLimit.get(`${period}:${name}`) ?? new Set() };
    }
    return keys;
  }

  const write = onceBatches<{ counts: UsageCount[]; near: NearLimitKeys }>({
    clock,
    take() {
      // Always a batch, even an empty one: its answer is the near-limit gauge.
      const counts: UsageCount[] = [];
      for (const byKey of pending.values()) for (const byOperation of byKey.values()) counts.push(...byOperation.values());
      const batch = { counts, near: nearLimitNow(clock.now()) };
      pending = new Map();
      pendingCounts = 0;
      nearLimit = new Map();
      return batch;
    },
    async send(id, batch) {
      const counts = await store.add(batch.counts, batch.near, id);
      options.onNearLimit?.(counts);
    },
    onFailure(error, givenUp) {
      if (givenUp) logger?.error({ err: error }, 'could not write usage counts for too long: the batch is dropped');
      else logger?.warn({ err: error, pending: pendingCounts }, 'could not write usage counts: the batch is sent again at the next flush');
    },
  });

  function noteNearLimit(period: QuotaPeriod, name: string, keyId: string): void {
    const key = `${period}:${name}`;
    let keys = nearLimit.get(key);
    if (keys === undefined) {
      keys = new Set();
      nearLimit.set(key, keys);
    }
    keys.add(keyId);
  }

  const { flush, close } = periodicFlush(write, options.flushIntervalMs);

  return {
    record(call) {
      const outcome = usageOutcomeOf(call);
      const caller = call.caller;
      const operation = call.route?.operation.id;
      if (outcome === undefined || caller === undefined || operation === undefined) return;
      const now = clock.now();
      const day = periodAt('day', now).name;
      let byKey = pending.get(day);
      if (byKey === undefined) {
        byKey = new Map();
        pending.set(day, byKey);
      }
      let byOperation = byKey.get(caller.keyId);
      if (byOperation === undefined) {
        byOperation = new Map();
        byKey.set(caller.keyId, byOperation);
      }
      let count = byOperation.get(operation);
      if (count === undefined) {
        count = { day, keyId: caller.keyId, operation, consumer: caller.name, ...emptyCounts() };
        byOperation.set(operation, count);
        pendingCounts++;
      }
      count[outcome]++;
      count.consumer = caller.name;
      const quota = call.quota;
      if (quota === undefined) return;
      for (const period of QUOTA_PERIODS) {
        const use = quota[period];
        if (use !== undefined && use.used >= use.limit * NEAR_LIMIT_SHARE) noteNearLimit(period, periodAt(period, now).name, caller.keyId);
      }
    },
    flush,
    close,
  };
}
