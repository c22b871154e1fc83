// Who still calls deprecated operations: counted in process, added to a shared store in batches, read as a report.
import type { Logger } from 'pino';
import type { Clock } from '../time/clock.ts';
import { onceBatches } from './once-batches.ts';
import { periodicFlush } from './periodic-flush.ts';

/** One consumer's calls to one deprecated operation; instants in milliseconds since the epoch. */
export interface DeprecatedCallCount {
  operation: string;
  keyId: string;
  consumer: string;
  calls: number;
  firstSeen: number;
  lastSeen: number;
}

/** A row of the report, as `npm run deprecations -- report --json` and `GET /deprecations` print it (an interface: keep it). */
export interface DeprecatedCallRow {
  operation: string;
  keyId: string;
  consumer: string;
  calls: number;
  firstSeen: string;
  lastSeen: string;
}

/** Where every process's counts add up: Redis in production (src/observability/redis-deprecated-call-store.ts). */
export interface DeprecatedCallStore {
  /**
   * Adds calls, keeps the earliest firstSeen and the latest lastSeen, and the latest consumer name. A batch whose
   * `batchId` the store has already added adds nothing again (a retry of an unanswered write).
   */
  add(batch: readonly DeprecatedCallCount[], batchId: string): Promise<void>;
  read(operations: readonly string[]): Promise<DeprecatedCallCount[]>;
}

/** By operation, then most calls first. */
export function toReportRows(counts: readonly DeprecatedCallCount[]): DeprecatedCallRow[] {
  return [...counts]
    .sort((a, b) => a.operation.localeCompare(b.operation) || b.calls - a.calls || a.keyId.localeCompare(b.keyId))
    .map((count) => ({
      operation: count.operation,
      keyId: count.keyId,
      consumer: count.consumer,
      calls: count.calls,
      firstSeen: new Date(count.firstSeen).toISOString(),
      lastSeen: new Date(count.lastSeen).toISOString(),
    }));
}

/** The report across replicas: what `npm run deprecations -- report`, `GET /deprecations` and `GET /admin/deprecations/report` give. */
export async function readDeprecationReport(store: DeprecatedCallStore, operations: readonly string[]): Promise<DeprecatedCallRow[]> {
  return toReportRows(await store.read(operations));
}

function merge(into: Map<string, DeprecatedCallCount>, count: DeprecatedCallCount): void {
  const key = `${count.operation}\n${count.keyId}`;
  const existing = into.get(key);
  if (!existing) {
    into.set(key, { ...count });
    return;
  }
  existing.calls += count.calls;
  existing.firstSeen = Math.min(existing.firstSeen, count.firstSeen);
  if (count.lastSeen >= existing.lastSeen) {
    existing.lastSeen = count.lastSeen;
    existing.consumer = count.consumer;
  }
}

/** The store of a gateway without Redis (the demo, in-process tests): one process's counts. */
export class MemoryDeprecatedCallStore implements DeprecatedCallStore {
  readonly #counts = new Map<string, DeprecatedCallCount>();

  async add(batch: readonly DeprecatedCallCount[], _batchId: string): Promise<void> {
    // In process a write always has its answer: no batch is ever sent twice.
    for (const count of batch) merge(this.#counts, count);
  }

  async read(operations: readonly string[]): Promise<DeprecatedCallCount[]> {
    return [...this.#counts.values()].filter((count) => operations.includes(count.operation)).map((count) => ({ ...count }));
  }
}

export interface DeprecatedCallRecorderOptions {
  store: DeprecatedCallStore;
  clock: Clock;
  /** How often the counts are written to the store; what a crash can lose. */
  flushIntervalMs: number;
  logger?: Logger;
}

export interface DeprecatedCallRecorder {
  /** On the request path: a map update, never a store round trip. */
  record(operation: string, keyId: string, consumer: string): void;
  /** Writes what was counted since the last flush (single flight); a failed batch is sent again, as it was, first. */
  flush(): Promise<void>;
  /** Stops the timer and flushes once more. */
  close(): Promise<void>;
}

/**
 * Counts per operation and key in memory, flushed every `flushIntervalMs` as batches with an id
 * (src/observability/once-batches.ts): a failed batch is sent again under its id, never merged into the next, so a
 * write whose answer was lost (a timeout while Redis stalled) is added once. Lost only: what a crash finds unwritten.
 */
export function createDeprecatedCallRecorder(options: DeprecatedCallRecorderOptions): DeprecatedCallRecorder {
  const { store, clock, logger } = options;
  let pending = new Map<string, DeprecatedCallCount>();

  const write = onceBatches<DeprecatedCallCount[]>({
    clock,
    take() {
      if (pending.size === 0) return undefined;
      const batch = [...pending.values()];
      pending = new Map();
      return batch;
    },
    send: (id, batch) => store.add(batch, id),
    onFailure(error, givenUp) {
      if (givenUp) logger?.error({ err: error }, 'could not write deprecated-call counts for too long: the batch is dropped');
      else logger?.warn({ err: error, pending: pending.size }, 'could not write deprecated-call counts: the batch is sent again at the next flush');
    },
  });

  const { flush, close } = periodicFlush(write, options.flushIntervalMs);

  return {
    record(operation, keyId, consumer) {
      const now = clock.now();
      const key = `${operation}\n${keyId}`;
      const existing = pending.get(key);
      if (existing) {
        existing.calls++;
        existing.firstSeen = Math.min(existing.firstSeen, now);
        existing.lastSeen = Math.max(existing.lastSeen, now);
        existing.consumer = consumer;
      } else {
        pending.set(key, { operation, keyId, consumer, calls: 1, firstSeen: now, lastSeen: now });
      }
    },
    flush,
    close,
  };
}
