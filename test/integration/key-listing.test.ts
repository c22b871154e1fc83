// KeyAdmin's listing on a real Redis: keys written before the ordered index, keys created mid-listing, and records that do not read back.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KeyAdmin, KeyAdminError } from '../../src/auth/key-admin.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import { keyLayout, toHashFields } from '../../src/auth/key-records.ts';
import type { KeyRecord } from '../../src/auth/key-store.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';

const PREFIX = 'key-listing-test:';
const layout = keyLayout(PREFIX);
const clock = fixedClock(TEST_NOW);
let redis: PrivateRedis;
let admin: KeyAdmin;

beforeAll(async () => {
  redis = await startRedis();
  admin = new KeyAdmin(redis.client, { keyPrefix: PREFIX, hashKey: createKeyHasher('key-listing-test-pepper'), clock });
});
beforeEach(() => redis.client.flushall());
afterAll(() => redis.stop());

const create = async (consumer: string) => {
  clock.set(clock.now() + 1000);
  return (await admin.create({ consumer, environments: ['staging'] })).record;
};

async function everyId(limit?: number): Promise<string[]> {
  const ids: string[] = [];
  for await (const page of admin.pages(limit)) ids.push(...page.map((record) => record.id));
  return ids;
}

/** A key as versions before the ordered index wrote it: its record, its id, and the id set only. */
async function storeAsBefore(id: string, createdAt: string): Promise<void> {
  const record: KeyRecord = { id, consumer: 'legacy', environments: ['staging'], createdAt, revoked: false };
  await redis.client
    .multi()
    .hset(layout.record(`hash-of-${id}`), toHashFields(record))
    .set(layout.byId(id), `hash-of-${id}`)
    .sadd(layout.ids, id)
    .exec();
}

describe('KeyAdmin.list', () => {
  it('lists keys written only to the id set in creation order among the others, and indexes them', async () => {
    const [first, second] = [await create('a'), await create('b')];
    await storeAsBefore('key_legacy000001', '2020-01-01T00:00:00.000Z');
    await storeAsBefore('key_legacy000002', new Date(Date.parse(first.createdAt) + 1).toISOString());
    expect(await everyId(1)).toEqual(['key_legacy000001', first.id, 'key_legacy000002', second.id]);
    expect(await redis.client.zcard(layout.order)).toBe(4);
  });

  it('lists once each key present for the whole listing, and one created after its page at the end', async () => {
    const before = [await create('a'), await create('b'), await create('c')];
    const first = await admin.list({ limit: 2 });
    const created = await create('d');
    const rest = await admin.list({ cursor: first.next!, limit: 2 });
    expect([...first.records, ...rest.records].map((record) => record.id)).toEqual([...before.map((record) => record.id), created.id]);
    expect(rest.next).toBeUndefined();
  });

  it('refuses a listing where a key has no record, naming it', async () => {
    await create('a');
    await storeAsBefore('key_norecord0001', '2020-01-01T00:00:00.000Z');
    await redis.client.del(layout.byId('key_norecord0001'));
    await expect(admin.list()).rejects.toEqual(new KeyAdminError('damaged', 'key key_norecord0001 is listed but has no record'));
  });

  it('refuses a listing where a record does not read back whole, naming it', async () => {
    const { id } = await create('a');
    const keyHash = (await redis.client.get(layout.byId(id)))!;
    await redis.client.hdel(layout.record(keyHash), 'createdAt');
    await expect(admin.list()).rejects.toEqual(new KeyAdminError('damaged', `the record of key ${id} is damaged`));
  });

  it.each([0, 1001, 1.5])('refuses a limit of %s', async (limit) => {
    await expect(admin.list({ limit })).rejects.toEqual(new KeyAdminError('invalid', 'limit must be an integer from 1 to 1000'));
  });
});
