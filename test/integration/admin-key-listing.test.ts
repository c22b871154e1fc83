// Listing keys a page at a time over a real Redis holding 50,000: the admin API's pages and the CLI give every key once, or fail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyLayout, orderMember, toHashFields } from '../../src/auth/key-records.ts';
import type { KeyRecord } from '../../src/auth/key-store.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { ADMIN_TOKEN, adminRequest, startAdminGateway, type AdminAnswer, type AdminGateway } from '../helpers/admin-api.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const PEPPER = 'admin-key-listing-pepper-01';
const KEYS = 50_000;
const layout = keyLayout('petstore-gateway:');

let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: AdminGateway;
/** Every id stored, oldest first: three keys share each millisecond, so ties are ordered by id. */
const ids: string[] = [];

/** Writes keys as KeyAdmin lays them out (src/auth/key-records.ts), in pipelines of 5,000: seconds, not minutes. */
async function storeKeys(count: number): Promise<void> {
  for (let start = 0; start < count; start += 5000) {
    const pipeline = redis.client.pipeline();
    for (let index = start; index < Math.min(count, start + 5000); index++) {
      const record: KeyRecord = {
        id: `key_${index.toString(36).padStart(12, '0')}`,
        consumer: `consumer-${index}`,
        environments: ['production'],
        createdAt: new Date(TEST_NOW - 86_400_000 + Math.floor(index / 3)).toISOString(),
        revoked: false,
      };
      const keyHash = index.toString(16).padStart(64, '0');
      pipeline
        .hset(layout.record(keyHash), toHashFields(record))
        .set(layout.byId(record.id), keyHash)
        .sadd(layout.ids, record.id)
        .zadd(layout.order, 0, orderMember(record));
      ids.push(record.id);
    }
    await pipeline.exec();
  }
}

beforeAll(async () => {
  [redis, backend] = await Promise.all([startRedis(), startPetStore()]);
  gateway = await startAdminGateway({ redisUrl: redis.url, upstreamUrl: backend.baseUrl, pepper: PEPPER, clock: fixedClock(TEST_NOW) });
  await storeKeys(KEYS);
}, 60_000);
afterAll(async () => {
  await gateway?.close();
  await Promise.all([backend?.close(), redis?.stop()]);
});

const admin = (path: string) => adminRequest(gateway.adminPort, path);

/** The cursor of a page whose last key is the `index`th: as the API writes it (base64url of `createdAt|id`). */
const cursorAfter = (index: number) =>
  Buffer.from(`${new Date(TEST_NOW - 86_400_000 + Math.floor(index / 3)).toISOString()}|${ids[index]}`).toString('base64url');

/** The path a page's Link names, or undefined on the last page. */
function nextPath(answer: AdminAnswer): string | undefined {
  const link = answer.headers.link;
  if (link === undefined) return undefined;
  const [, path] = /^<([^>]+)>; rel="next"$/.exec(String(link)) ?? [];
  if (path === undefined) throw new Error(`not a next link: ${String(link)}`);
  return path;
}

/** Answers a pipelined command for `byId(id)` with an error (WRONGTYPE) while `work` runs: one lookup of a page fails. */
async function withFailingLookup<T>(id: string, work: () => Promise<T>): Promise<T> {
  const keyHash = await redis.client.get(layout.byId(id));
  await redis.client.del(layout.byId(id));
  await redis.client.hset(layout.byId(id), 'not', 'a string');
  try {
    return await work();
  } finally {
    await redis.client.del(layout.byId(id));
    await redis.client.set(layout.byId(id), keyHash!);
  }
}

describe('GET /admin/keys', () => {
  it('lists 50,000 keys across pages, each id exactly once, oldest first', async () => {
    const listed: string[] = [];
    let path: string | undefined = '/admin/keys?limit=1000';
    let pages = 0;
    while (path !== undefined) {
      const answer = await admin(path);
      expect(answer.status).toBe(200);
      const page = answer.body as Array<{ id: string }>;
      expect(page.length).toBeLessThanOrEqual(1000);
      listed.push(...page.map((key) => key.id));
      path = nextPath(answer);
      pages++;
    }
    expect(pages).toBe(50);
    expect(listed).toEqual(ids);
  }, 60_000);

  it('gives 100 keys by default, and the next page’s Link without a limit', async () => {
    const answer = await admin('/admin/keys');
    expect((answer.body as unknown[]).length).toBe(100);
    expect(answer.headers.link).toBe(`</admin/keys?cursor=${cursorAfter(99)}>; rel="next"`);
  });

  it('keeps the limit in the Link, and gives none on the last page', async () => {
    const first = await admin('/admin/keys?limit=2');
    expect((first.body as Array<{ id: string }>).map((key) => key.id)).toEqual(ids.slice(0, 2));
    expect(nextPath(first)).toMatch(/^\/admin\/keys\?cursor=[A-Za-z0-9_-]+&limit=2$/);
    const last = await admin(`/admin/keys?cursor=${cursorAfter(KEYS - 2)}&limit=2`);
    expect((last.body as Array<{ id: string }>).map((key) => key.id)).toEqual([ids[KEYS - 1]]);
    expect(last.headers.link).toBeUndefined();
  });

  it('refuses a cursor it did not give 400', async () => {
    const answer = await admin(`/admin/keys?cursor=${Buffer.from('elsewhere').toString('base64url')}`);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: 'invalid_request', message: 'cursor is not one this API gave', status: 400 });
  });

  it('refuses a limit over 1000 400', async () => {
    const answer = await admin('/admin/keys?limit=1001');
    expect(answer.body).toEqual({ code: 'invalid_request', message: "Query parameter 'limit' must be <= 1000", status: 400 });
  });

  it('answers a page one of whose lookups fails 503, not a shorter 200', async () => {
    const answer = await withFailingLookup(ids[150]!, () => admin(`/admin/keys?limit=100&cursor=${cursorAfter(99)}`));
    expect(answer.status).toBe(503);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers['retry-after']).toBe('1');
    expect(answer.body).toEqual({ code: 'service_unavailable', message: 'Redis did not answer; retry shortly', status: 503 });
  });

  it('answers 503 when Redis stops answering part way through a listing', async () => {
    const first = await admin('/admin/keys?limit=1000');
    expect(first.status).toBe(200);
    // Every client of this Redis waits 1.5 s, longer than the gateway's command timeout (500 ms).
    await redis.client.call('CLIENT', 'PAUSE', '1500', 'ALL');
    const second = await admin(nextPath(first)!);
    expect(second.status).toBe(503);
    expect(second.body).toEqual({ code: 'service_unavailable', message: 'Redis did not answer; retry shortly', status: 503 });
    // Answered once the pause ends: the next test finds Redis as it was.
    expect(await redis.client.ping()).toBe('PONG');
  });
});

describe('npm run keys -- list', () => {
  const cliEnv = () => ({ REDIS_URL: redis.url, API_KEY_PEPPER: PEPPER });
  const remoteEnv = () => ({ ADMIN_API_TOKEN: ADMIN_TOKEN, REDIS_URL: 'redis://127.0.0.1:1' });
  const adminUrl = () => `http://127.0.0.1:${gateway.adminPort}`;

  it('prints all 50,000 keys from Redis as one JSON array, each once, oldest first', async () => {
    const result = await runKeysCli(['list', '--json'], cliEnv());
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as Array<{ id: string }>).map((key) => key.id)).toEqual(ids);
  }, 60_000);

  it('follows the admin API’s pages to all 50,000 keys with --admin-url', async () => {
    const result = await runKeysCli(['list', '--json', '--admin-url', adminUrl()], remoteEnv());
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as Array<{ id: string }>).map((key) => key.id)).toEqual(ids);
  }, 60_000);

  it('exits 1 with an unclosed array when a lookup fails part way, on Redis', async () => {
    const result = await withFailingLookup(ids[30_000]!, () => runKeysCli(['list', '--json'], cliEnv()));
    expect(result.code).toBe(1);
    expect(result.stdout.startsWith('[{')).toBe(true);
    expect(result.stdout.endsWith(']\n')).toBe(false);
    expect(result.stderr).toBe('keys: WRONGTYPE Operation against a key holding the wrong kind of value\n');
  }, 60_000);

  it('exits 1 with the API’s 503 when a page fails part way, with --admin-url', async () => {
    const result = await withFailingLookup(ids[30_000]!, () => runKeysCli(['list', '--json', '--admin-url', adminUrl()], remoteEnv()));
    expect(result.code).toBe(1);
    expect(result.stdout.endsWith(']\n')).toBe(false);
    expect(result.stderr).toBe('keys: the admin API refused: Redis did not answer; retry shortly (503 service_unavailable)\n');
  }, 60_000);
});
