// The deprecated-call counts of every replica, added up in Redis: one transaction per flush, whatever the batch holds.
import { timed, type RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import type { DeprecatedCallCount, DeprecatedCallStore } from './deprecated-calls.ts';

/**
 * Per operation: calls and consumers (HASHes by keyId), first and last seen (ZSETs by ZADD LT and GT, so flush order
 * does not matter). The hash tag `{deprecations}` keeps one Cluster slot: a flush is one MULTI.
 */
function deprecatedCallLayout(prefix: string) {
  const base = (what: string) => (operation: string) => `${prefix}{deprecations}:${what}:${operation}`;
  return { calls: base('calls'), consumers: base('consumers'), firstSeen: base('first-seen'), lastSeen: base('last-seen') };
}

function scores(flat: readonly string[]): Map<string, number> {
  const map = new Map<string, number>();
  for (let index = 0; index + 1 < flat.length; index += 2) map.set(flat[index]!, Number(flat[index + 1]));
  return map;
}

export class RedisDeprecatedCallStore implements DeprecatedCallStore {
  readonly #redis: RedisClient;
  readonly #layout: ReturnType<typeof deprecatedCallLayout>;
  readonly #observe: RedisCommandObserver | undefined;

  /** `observe` is told how each flush's transaction went (the Redis command metrics); reads for the report are not timed. */
  constructor(redis: RedisClient, keyPrefix: string, observe?: RedisCommandObserver) {
    this.#redis = redis;
    this.#layout = deprecatedCallLayout(keyPrefix);
    this.#observe = observe;
  }

  async add(batch: readonly DeprecatedCallCount[]): Promise<void> {
    if (batch.length === 0) return;
    const layout = this.#layout;
    const transaction = this.#redis.multi();
    for (const count of batch) {
      transaction
        .hincrby(layout.calls(count.operation), count.keyId, count.calls)
        .hset(layout.consumers(count.operation), count.keyId, count.consumer)
        .zadd(layout.firstSeen(count.operation), 'LT', count.firstSeen, count.keyId)
        .zadd(layout.lastSeen(count.operation), 'GT', count.lastSeen, count.keyId);
    }
    // A command refused inside the transaction fails the flush as much as Redis not answering: timed together.
    await timed(this.#observe, async () => {
      const results = await transaction.exec();
      const failed = results?.find(([error]) => error);
      if (!results || failed) throw new Error(`deprecated-call counts were not written${failed ? `: ${String(failed[0])}` : ''}`);
    });
  }

  async read(operations: readonly string[]): Promise<DeprecatedCallCount[]> {
    const layout = this.#layout;
    const counts: DeprecatedCallCount[] = [];
    for (const operation of operations) {
      // One transaction: a flush landing between the reads cannot show calls without their consumer.
      const results = await this.#redis
        .multi()
        .hgetall(layout.calls(operation))
        .hgetall(layout.consumers(operation))
        .zrange(layout.firstSeen(operation), '0', '-1', 'WITHSCORES')
        .zrange(layout.lastSeen(operation), '0', '-1', 'WITHSCORES')
        .exec();
      const failed = results?.find(([error]) => error);
      if (!results || failed) throw new Error(`deprecated-call counts of ${operation} could not be read${failed ? `: ${String(failed[0])}` : ''}`);
      const [calls, consumers] = [results[0]![1], results[1]![1]] as Array<Record<string, string>>;
      const [firstSeen, lastSeen] = [scores(results[2]![1] as string[]), scores(results[3]![1] as string[])];
      for (const [keyId, count] of Object.entries(calls!)) {
        counts.push({
          operation,
          keyId,
          consumer: consumers![keyId] ?? '',
          calls: Number(count),
          firstSeen: firstSeen.get(keyId) ?? 0,
          lastSeen: lastSeen.get(keyId) ?? 0,
        });
      }
    }
    return counts;
  }
}
