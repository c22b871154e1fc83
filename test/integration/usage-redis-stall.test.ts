// Usage and the deprecation report after Redis stalls (SIGSTOP) while calls are served: each call counted once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';
import { adminRequest, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';

const PEPPER = 'usage-stall-test-pepper-01';
const clock = fixedClock(Date.parse('2030-03-14T10:00:00Z'));
/** The 25 s stall and 20 calls, scaled down: the flushes time out at 100 ms instead of 500, every 50 ms. */
const COMMAND_TIMEOUT_MS = 100;
const CALLS_DURING_STALL = 20;

let redis: PrivateRedis;
let redisPid: number;
let backend: SampleBackend;
let replicas: AdminGateway[];
let key: { id: string; key: string };
/** What was served, by operation: the counts usage and the report must read. */
const served = { listPets: 0, getPet: 0 };

async function call(replica: AdminGateway, operation: 'listPets' | 'getPet'): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${replica.port}${operation === 'getPet' ? '/v1/pets/1' : '/v1/pets'}`, {
    headers: { Authorization: `Bearer ${key.key}` },
  });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
  served[operation]++;
}

async function usage(): Promise<Record<string, number>> {
  const answer = await adminRequest(replicas[0]!.adminPort, '/admin/usage?from=2030-03-14&to=2030-03-14');
  const rows = answer.body as Array<{ operation: string; admitted: number }>;
  return Object.fromEntries(rows.map((row) => [row.operation, row.admitted]));
}

async function reportedGetPetCalls(): Promise<number | undefined> {
  // The admin listener serves a report at most a flush interval old: a second later, it reads Redis again.
  clock.set(clock.now() + 1000);
  const answer = await adminRequest(replicas[1]!.adminPort, '/admin/deprecations/report');
  return (answer.body as Array<{ keyId: string; calls: number }>).find((row) => row.keyId === key.id)?.calls;
}

beforeAll(async () => {
  redis = await startRedis();
  redisPid = Number(/^process_id:(\d+)/m.exec(await redis.client.info('server'))![1]);
  backend = await startPetStore();
  const overrides = { redis: { commandTimeoutMs: COMMAND_TIMEOUT_MS }, usage: { flushIntervalMs: 50 }, deprecationReport: { flushIntervalMs: 50 } };
  const start = () => startAdminGateway({ redisUrl: redis.url, upstreamUrl: backend.baseUrl, pepper: PEPPER, clock, overrides });
  replicas = [await start(), await start()];
  const made = await replicas[0]!.admin.create({ consumer: 'stalled', environments: ['production'], rateLimitPerMinute: 1000 });
  key = { id: made.record.id, key: made.key };
  // Each replica looks the key up once while Redis answers: during the stall it is found in the cache.
  for (const replica of replicas) {
    await call(replica, 'listPets');
    await call(replica, 'getPet');
  }
  await waitFor(async () => (await usage()).listPets === 2 && (await reportedGetPetCalls()) === 2, 10_000, 50);
  process.kill(redisPid, 'SIGSTOP');
  try {
    for (let index = 0; index < CALLS_DURING_STALL; index++) await call(replicas[index % 2]!, index % 3 === 0 ? 'getPet' : 'listPets');
    // More flushes time out on the stalled connection, each of them sent to Redis all the same.
    await sleep(20 * COMMAND_TIMEOUT_MS);
  } finally {
    process.kill(redisPid, 'SIGCONT');
  }
  await waitFor(async () => (await usage()).listPets === served.listPets && (await reportedGetPetCalls()) === served.getPet, 10_000, 50);
  // Every queued and retried flush has run by now: nothing lands late.
  await sleep(40 * 50);
}, 60_000);
afterAll(async () => {
  if (redisPid !== undefined) process.kill(redisPid, 'SIGCONT');
  for (const replica of replicas ?? []) await replica.close();
  await backend?.close();
  await redis?.stop();
});

describe('counts after a Redis stall with calls served meanwhile', () => {
  it('usage reads exactly the calls served', async () => {
    expect(served.listPets + served.getPet).toBe(4 + CALLS_DURING_STALL);
    expect(await usage()).toEqual({ listPets: served.listPets, getPet: served.getPet });
  });

  it('the deprecation report reads exactly the getPet calls served', async () => {
    expect(await reportedGetPetCalls()).toBe(served.getPet);
  });

  it('the flushes did fail during the stall (the replicas logged it)', () => {
    const warned = replicas.flatMap((replica) => replica.logs).filter((line) => String(line.msg).startsWith('could not write usage counts'));
    expect(warned.length).toBeGreaterThan(0);
  });
});
