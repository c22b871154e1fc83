// KeyAdmin's rotation on a real Redis: the old key's expiry under an overlap, and the grants the successor copies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyAdmin } from '../../src/auth/key-admin.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import type { RedisClient } from '../../src/redis/connect.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';

const PREFIX = 'key-rotation-test:';
const hashKey = createKeyHasher('key-rotation-test-pepper');
const clock = fixedClock(TEST_NOW);
const at = (minutesFromNow: number) => new Date(TEST_NOW + minutesFromNow * 60_000).toISOString();
let redis: PrivateRedis;
let admin: KeyAdmin;

beforeAll(async () => {
  redis = await startRedis();
  admin = new KeyAdmin(redis.client, { keyPrefix: PREFIX, hashKey, clock });
});
afterAll(() => redis.stop());

describe('an overlap', () => {
  it('never pushes back an earlier expiry: the old key keeps its own', async () => {
    const { record } = await admin.create({ consumer: 'expiring', environments: ['staging'], expiresAt: at(10) });
    const rotated = await admin.rotate(record.id, 3600);
    expect(rotated.previous.expiresAt).toBe(at(10));
    expect((await admin.show(record.id)).expiresAt).toBe(at(10));
  });

  it('ending before the key would expire becomes its expiry', async () => {
    const { record } = await admin.create({ consumer: 'expiring-later', environments: ['staging'], expiresAt: at(120) });
    const rotated = await admin.rotate(record.id, 3600);
    expect(rotated.previous.expiresAt).toBe(at(60));
    expect((await admin.show(record.id)).expiresAt).toBe(at(60));
  });

  it('leaves the successor the old key’s own expiry', async () => {
    const { record } = await admin.create({ consumer: 'expiring-successor', environments: ['staging'], expiresAt: at(120) });
    const rotated = await admin.rotate(record.id, 3600);
    expect(rotated.issued.record.expiresAt).toBe(at(120));
  });
});

describe('the successor', () => {
  /**
   * A connection on which another operator's changes land between the rotation's read of the old key and its
   * script (EVAL): the race a stale read loses, made certain.
   */
  function changedBeforeTheScript(change: () => Promise<unknown>): RedisClient {
    return new Proxy(redis.client, {
      get(target, property) {
        if (property === 'eval')
          return async (...args: Parameters<RedisClient['eval']>) => {
            await change();
            return target.eval(...args);
          };
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  it('carries the grants stored when the rotation is written, not those read before', async () => {
    const { record } = await admin.create({ consumer: 'changed-meanwhile', environments: ['staging'], rateLimitPerMinute: 100, optedIn: ['beta'] });
    const racing = new KeyAdmin(
      changedBeforeTheScript(async () => {
        await admin.setRateLimit(record.id, 5);
        await admin.setOptIn(record.id, []);
      }),
      { keyPrefix: PREFIX, hashKey, clock },
    );
    const rotated = await racing.rotate(record.id);
    const expected = {
      id: rotated.issued.record.id,
      consumer: 'changed-meanwhile',
      environments: ['staging'],
      createdAt: at(0),
      revoked: false,
      rateLimitPerMinute: 5,
    };
    expect(rotated.issued.record).toEqual(expected);
    expect(await admin.show(rotated.issued.record.id)).toEqual(expected);
  });

  it('answers the old key as the script left it, with the grants it read', async () => {
    const { record } = await admin.create({ consumer: 'changed-meanwhile-old', environments: ['staging'], rateLimitPerMinute: 100 });
    const racing = new KeyAdmin(
      changedBeforeTheScript(() => admin.setOptIn(record.id, ['experimental'])),
      { keyPrefix: PREFIX, hashKey, clock },
    );
    const rotated = await racing.rotate(record.id);
    expect(rotated.previous).toEqual({ ...record, revoked: true, optedIn: ['experimental'], rotatedTo: rotated.issued.record.id });
    expect(await admin.show(record.id)).toEqual(rotated.previous);
  });
});

describe('quotas', () => {
  it('are the successor’s as the old key’s stood, both kept by it', async () => {
    const { record } = await admin.create({ consumer: 'quoted-rotation', environments: ['staging'], quotaPerDay: 100, quotaPerMonth: 2000 });
    await admin.setQuota(record.id, { perDay: 150 });
    const rotated = await admin.rotate(record.id, 60);
    const expected = {
      id: rotated.issued.record.id,
      consumer: 'quoted-rotation',
      environments: ['staging'],
      createdAt: at(0),
      revoked: false,
      quotaPerDay: 150,
      quotaPerMonth: 2000,
    };
    expect(rotated.issued.record).toEqual(expected);
    expect(await admin.show(rotated.issued.record.id)).toEqual(expected);
    expect(rotated.previous).toMatchObject({ quotaPerDay: 150, quotaPerMonth: 2000, rotatedTo: expected.id });
  });

  it('removed before the script runs are not copied', async () => {
    const { record } = await admin.create({ consumer: 'unquoted-rotation', environments: ['staging'], quotaPerDay: 100, quotaPerMonth: 2000 });
    await admin.setQuota(record.id, { perDay: null });
    const rotated = await admin.rotate(record.id);
    expect(rotated.issued.record).not.toHaveProperty('quotaPerDay');
    expect(rotated.issued.record.quotaPerMonth).toBe(2000);
    expect(await admin.show(rotated.issued.record.id)).toEqual(rotated.issued.record);
  });
});
