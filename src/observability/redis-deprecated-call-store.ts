// The deprecated-call counts of every replica, added up in Redis: one script per flush, whatever the batch holds, each batch once.
import { timed, type RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import type { DeprecatedCallCount, DeprecatedCallStore } from './deprecated-calls.ts';
import { BATCH_ID_KEPT_MS } from './once-batches.ts';

/**
 * Per operation: calls and consumers (HASHes by keyId), first and last seen (ZSETs by ZADD LT and GT, so flush order
 * does not matter); a flush's batch id, kept `BATCH_ID_KEPT_MS`. The hash tag `{deprecations}` keeps one Cluster slot:
 * a flush is one script.
 */
function deprecatedCallLayout(prefix: string) {
  const base = (what: string) => (operation: string) => `${prefix}{deprecations}:${what}:${operation}`;
  return { calls: base('calls'), consumers: base('consumers'), firstSeen: base('first-seen'), lastSeen: base('last-seen'), batch: base('batch') };
}

/**
 * KEYS[1]: the batch id's key; then per count its operation's calls, consumers, first-seen and last-seen keys.
 * ARGV[1]: how long the id is kept; then per count keyId, consumer, calls, firstSeen, lastSeen. Added only if the id
 * was not there (SET NX in the same script), so a retry of a batch Redis already ran adds nothing.
 */
const ADD_DEPRECATED_CALLS = `
if not redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 0 end
for i = 0, (#KEYS - 1) / 4 - 1 do
  local k, a = 1 + 4 * i, 1 + 5 * i
  redis.call('HINCRBY', KEYS[k + 1], ARGV[a + 1], ARGV[a + 3])
  redis.call('HSET', KEYS[k + 2], ARGV[a + 1], ARGV[a + 2])
  redis.call('ZADD', KEYS[k + 3], 'LT', ARGV[a + 4], ARGV[a + 1])
  redis.call('ZADD', KEYS[k + 4], 'GT', ARGV[a + 5], ARGV[a + 1])
end
return 1
`;

type RedisWithAddDeprecatedCalls = RedisClient & { addDeprecatedCalls(...keysThenArguments: string[]): Promise<number> };

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
    // The number of keys varies with the batch: given with each call.
    if (!('addDeprecatedCalls' in redis)) redis.defineCommand('addDeprecatedCalls', { lua: ADD_DEPRECATED_CALLS });
    this.#redis = redis;
    this.#layout = deprecatedCallLayout(keyPrefix);
    this.#observe = observe;
  }

  async add(batch: readonly DeprecatedCallCount[], batchId: string): Promise<void> {
    if (batch.length === 0) return;
    const layout = this.#layout;
    // The id's key shares the batch's slot: `{deprecations}` in every key.
    const keys = [layout.batch(batchId)];
    const args = [String(BATCH_ID_KEPT_MS)];
    for (const count of batch) {
      keys.push(layout.calls(count.operation), layout.consumers(count.operation), layout.firstSeen(count.operation), layout.lastSeen(count.operation));
      args.push(count.keyId, count.consumer, String(count.calls), String(count.firstSeen), String(count.lastSeen));
    }
    await timed(this.#observe, () => (this.#redis as RedisWithAddDeprecatedCalls).addDeprecatedCalls(String(keys.length), ...keys, ...args));
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
