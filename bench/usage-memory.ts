// Redis memory that usage per consumer costs: a day of usage for N active keys, written by the gateway's own store
// (src/observability/redis-usage-store.ts) into a private redis-server, measured as the growth of `used_memory`.
//   node bench/usage-memory.ts [keys=10000] [operations=3]   each key calls `operations` operations, admitted and
//   refused by its rate limit (two fields each), and the results go to bench/results/<date>-usage-memory.json.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RedisUsageStore } from '../src/observability/redis-usage-store.ts';
import type { UsageCount } from '../src/observability/usage.ts';
import { fixedClock } from '../src/time/clock.ts';
import { startRedis } from '../support/start-redis.ts';
import { ROOT } from './gateway-variants.ts';
import { runOrigin } from './results-file.ts';

const KEYS = Number(process.argv[2] ?? 10_000);
const OPERATIONS = Number(process.argv[3] ?? 3);
const RETENTION_DAYS = 400;
const OPERATION_IDS = ['listPets', 'getPet', 'createPet', 'updatePet', 'deletePet', 'findPetsByTag'];

const redis = await startRedis();
try {
  const store = new RedisUsageStore(redis.client, {
    keyPrefix: 'petstore-gateway:',
    clock: fixedClock(Date.parse('2030-03-14T12:00:00Z')),
    retentionDays: RETENTION_DAYS,
  });
  const usedMemory = async () => Number(/^used_memory:(\d+)/m.exec(await redis.client.info('memory'))![1]);
  const none = { day: { period: '2030-03-14', keyIds: new Set<string>() }, month: { period: '2030-03', keyIds: new Set<string>() } };
  const before = await usedMemory();
  const keyIds = Array.from({ length: KEYS }, (_, index) => `key_${index.toString(36).padStart(12, '0')}`);
  for (let start = 0; start < KEYS; start += 500) {
    const batch: UsageCount[] = keyIds.slice(start, start + 500).flatMap((keyId, index) =>
      OPERATION_IDS.slice(0, OPERATIONS).map((operation) => ({
        day: '2030-03-14',
        keyId,
        operation,
        consumer: `consumer ${start + index}`,
        admitted: 1_234,
        refusedQuota: 0,
        refusedRateLimit: 56,
      })),
    );
    await store.add(batch, none, `bench-${start}`);
  }
  const after = await usedMemory();
  const perKeyDay = (after - before) / KEYS;
  const summary = {
    origin: runOrigin(ROOT, new Date()),
    redis: /^redis_version:(.+)$/m.exec(await redis.client.info('server'))![1]!.trim(),
    keys: KEYS,
    operationsPerKey: OPERATIONS,
    retentionDays: RETENTION_DAYS,
    bytesPerActiveKeyPerDay: Math.round(perKeyDay),
    bytesFor10000KeysOverRetention: Math.round(perKeyDay * 10_000 * RETENTION_DAYS),
  };
  const file = join(ROOT, 'bench', 'results', `${summary.origin.date.slice(0, 10)}-usage-memory.json`);
  writeFileSync(file, `${JSON.stringify(summary, null, 2)}\n`);
  process.stdout.write(
    `${KEYS} keys × ${OPERATIONS} operations: ${Math.round(perKeyDay)} bytes a key a day; 10,000 keys over ${RETENTION_DAYS} days: ${(summary.bytesFor10000KeysOverRetention / 2 ** 30).toFixed(2)} GiB (${file})\n`,
  );
} finally {
  await redis.stop();
}
