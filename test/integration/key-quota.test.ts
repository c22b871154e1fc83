// KeyAdmin's quotas on a real Redis: given at creation, set, changed and removed one at a time, seen by a replica's key cache at once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CachedKeyStore } from '../../src/auth/cached-key-store.ts';
import { KeyAdmin } from '../../src/auth/key-admin.ts';
import { followKeyEvents, type KeyEvents } from '../../src/auth/key-events.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import { keyLayout } from '../../src/auth/key-records.ts';
import { RedisKeyStore } from '../../src/auth/redis-key-store.ts';
import { createRedisClient, type RedisClient } from '../../src/redis/connect.ts';
import { fixedClock, systemClock } from '../../src/time/clock.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';

const PREFIX = 'key-quota-test:';
const hashKey = createKeyHasher('key-quota-test-pepper-0001');
const layout = keyLayout(PREFIX);
let redis: PrivateRedis;
let admin: KeyAdmin;
let subscriber: RedisClient | undefined;
let following: KeyEvents | undefined;

beforeAll(async () => {
  redis = await startRedis();
  admin = new KeyAdmin(redis.client, { keyPrefix: PREFIX, hashKey, clock: fixedClock(TEST_NOW) });
});
afterEach(() => {
  following?.close();
  subscriber?.disconnect();
});
afterAll(() => redis.stop());

/** The key's record hash as Redis holds it. */
async function storedFields(keyId: string): Promise<Record<string, string>> {
  const keyHash = await redis.client.get(layout.byId(keyId));
  return redis.client.hgetall(layout.record(keyHash!));
}

/** A refusal as the key cores make it: its class, why, and the operator's message. */
const refused = (refusal: string, message: string) => ({ name: 'KeyAdminError', refusal, message });
const invalid = (message: string) => refused('invalid', message);

describe('create', () => {
  it('stores both quotas as the record’s hash fields', async () => {
    const { record } = await admin.create({ consumer: 'quoted', environments: ['staging'], quotaPerDay: 1000, quotaPerMonth: 20_000 });
    expect(record).toMatchObject({ quotaPerDay: 1000, quotaPerMonth: 20_000 });
    expect(await storedFields(record.id)).toMatchObject({ quotaPerDay: '1000', quotaPerMonth: '20000' });
    expect(await admin.show(record.id)).toEqual(record);
  });

  it('stores no quota field when none is given', async () => {
    const { record } = await admin.create({ consumer: 'unquoted', environments: ['staging'] });
    expect(Object.keys(await storedFields(record.id)).sort()).toEqual(['consumer', 'createdAt', 'environments', 'id', 'revoked']);
  });

  it.each([
    ['0', { quotaPerDay: 0 }, 'quotaPerDay must be a whole number of requests from 1 to 9007199254740991, not 0'],
    ['a negative number', { quotaPerMonth: -5 }, 'quotaPerMonth must be a whole number of requests from 1 to 9007199254740991, not -5'],
    ['a fraction', { quotaPerDay: 1.5 }, 'quotaPerDay must be a whole number of requests from 1 to 9007199254740991, not 1.5'],
    ['an unsafe integer', { quotaPerMonth: 2 ** 53 }, 'quotaPerMonth must be a whole number of requests from 1 to 9007199254740991, not 9007199254740992'],
    ['NaN', { quotaPerDay: Number.NaN }, 'quotaPerDay must be a whole number of requests from 1 to 9007199254740991, not NaN'],
  ])('refuses %s as a quota, writing nothing', async (_, quotas, message) => {
    const before = await redis.client.zcard(layout.order);
    await expect(admin.create({ consumer: 'refused', environments: ['staging'], ...quotas })).rejects.toMatchObject(invalid(message));
    expect(await redis.client.zcard(layout.order)).toBe(before);
  });
});

describe('setQuota', () => {
  async function keyWithQuotas(quotas: { quotaPerDay?: number; quotaPerMonth?: number } = {}) {
    return (await admin.create({ consumer: 'acme', environments: ['production'], ...quotas })).record;
  }

  it('sets a quota on a key that had none, returning the record', async () => {
    const record = await keyWithQuotas();
    expect(await admin.setQuota(record.id, { perDay: 500 })).toEqual({ ...record, quotaPerDay: 500 });
    expect(await storedFields(record.id)).toMatchObject({ quotaPerDay: '500' });
  });

  it('changes one quota and leaves the other as it is', async () => {
    const record = await keyWithQuotas({ quotaPerDay: 100, quotaPerMonth: 3000 });
    expect(await admin.setQuota(record.id, { perMonth: 4000 })).toEqual({ ...record, quotaPerDay: 100, quotaPerMonth: 4000 });
  });

  it('sets both at once', async () => {
    const record = await keyWithQuotas({ quotaPerDay: 100 });
    expect(await admin.setQuota(record.id, { perDay: 200, perMonth: 5000 })).toEqual({ ...record, quotaPerDay: 200, quotaPerMonth: 5000 });
  });

  it('removes one quota (the hash field deleted) and keeps the other', async () => {
    const record = await keyWithQuotas({ quotaPerDay: 100, quotaPerMonth: 3000 });
    const changed = await admin.setQuota(record.id, { perDay: null });
    expect(changed).toEqual({ ...record, quotaPerMonth: 3000, quotaPerDay: undefined });
    expect(changed).not.toHaveProperty('quotaPerDay');
    const fields = await storedFields(record.id);
    expect(fields).not.toHaveProperty('quotaPerDay');
    expect(fields.quotaPerMonth).toBe('3000');
  });

  it('removes both', async () => {
    const { quotaPerDay: _day, quotaPerMonth: _month, ...unlimited } = await keyWithQuotas({ quotaPerDay: 100, quotaPerMonth: 3000 });
    expect(await admin.setQuota(unlimited.id, { perDay: null, perMonth: null })).toEqual(unlimited);
    expect(Object.keys(await storedFields(unlimited.id)).sort()).toEqual(['consumer', 'createdAt', 'environments', 'id', 'revoked']);
  });

  it('removes a quota that was never set without complaint', async () => {
    const record = await keyWithQuotas();
    expect(await admin.setQuota(record.id, { perMonth: null })).toEqual(record);
  });

  it('sets one quota and removes the other in one change', async () => {
    const record = await keyWithQuotas({ quotaPerDay: 100 });
    const { quotaPerDay: _day, ...rest } = record;
    expect(await admin.setQuota(record.id, { perDay: null, perMonth: 900 })).toEqual({ ...rest, quotaPerMonth: 900 });
  });

  it('refuses an unknown id as not_found', async () => {
    await expect(admin.setQuota('key_unknown00000', { perDay: 1 })).rejects.toMatchObject(refused('not_found', 'no key with id key_unknown00000'));
  });

  it('refuses a change that names neither quota, moving no epoch', async () => {
    const record = await keyWithQuotas({ quotaPerDay: 100 });
    const epoch = await redis.client.get(layout.eventsEpoch);
    await expect(admin.setQuota(record.id, {})).rejects.toMatchObject(invalid('a quota change names perDay, perMonth or both'));
    expect(await redis.client.get(layout.eventsEpoch)).toBe(epoch);
  });

  it.each([
    ['0', { perDay: 0 }, 'perDay must be a whole number of requests from 1 to 9007199254740991, not 0'],
    ['a fraction', { perMonth: 2.5 }, 'perMonth must be a whole number of requests from 1 to 9007199254740991, not 2.5'],
    ['an unsafe integer', { perDay: 1e20 }, 'perDay must be a whole number of requests from 1 to 9007199254740991, not 100000000000000000000'],
  ])('refuses %s, leaving both quotas as they were', async (_, change, message) => {
    const record = await keyWithQuotas({ quotaPerDay: 100, quotaPerMonth: 3000 });
    await expect(admin.setQuota(record.id, { perMonth: null, ...change })).rejects.toMatchObject(invalid(message));
    expect(await admin.show(record.id)).toEqual(record);
  });

  it('moves the epoch and announces the change with it', async () => {
    const record = await keyWithQuotas();
    const before = Number((await redis.client.get(layout.eventsEpoch)) ?? 0);
    const listener = createRedisClient(
      { url: redis.url, sentinels: [], sentinelName: 'mymaster', clusterNodes: [], password: null, commandTimeoutMs: 500, connectTimeoutMs: 500 },
      { role: 'subscriber', name: 'key-quota-test-listener' },
    );
    try {
      const announced = new Promise<string>((resolve) => listener.on('message', (_channel: string, message: string) => resolve(message)));
      await listener.subscribe(layout.events);
      await admin.setQuota(record.id, { perDay: 10, perMonth: null });
      const keyHash = await redis.client.get(layout.byId(record.id));
      expect(JSON.parse(await announced)).toEqual({ type: 'changed', keyHash, epoch: before + 1 });
      expect(Number(await redis.client.get(layout.eventsEpoch))).toBe(before + 1);
    } finally {
      listener.disconnect();
    }
  });

  it('reaches a replica’s key cache at once, which held the old record', async () => {
    const commands = redis.client;
    const cache = new CachedKeyStore(new RedisKeyStore(commands, PREFIX), { maxEntries: 100, ttlMs: 60_000, negativeTtlMs: 60_000, clock: systemClock });
    subscriber = createRedisClient(
      { url: redis.url, sentinels: [], sentinelName: 'mymaster', clusterNodes: [], password: null, commandTimeoutMs: 500, connectTimeoutMs: 500 },
      { role: 'subscriber', name: 'key-quota-test-events' },
    );
    // A minute between epoch checks: only the announcement can reach the cache within the second.
    following = followKeyEvents({ subscriber, redis: commands, keyPrefix: PREFIX, cache, checkMs: 60_000 });
    await following.subscribed;
    const { key, record } = await admin.create({ consumer: 'cached', environments: ['production'], quotaPerDay: 100 });
    const keyHash = hashKey(key);
    expect((await cache.findByHash(keyHash))?.quotaPerDay).toBe(100);
    await admin.setQuota(record.id, { perDay: 7 });
    await waitFor(async () => (await cache.findByHash(keyHash))?.quotaPerDay === 7, 1000, 5);
  });
});
