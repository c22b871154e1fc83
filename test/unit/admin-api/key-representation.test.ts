// A key as the admin API answers it and as the CLI's remote mode reads it back: `consumer`, and `name` for the deprecation window.
import { describe, expect, it } from 'vitest';
import { fromApiKey, toApiKey } from '../../../src/admin-api/key-representation.ts';
import type { KeyRecord } from '../../../src/auth/key-store.ts';

const record: KeyRecord = { id: 'key_AAAAAAAAAAAA', consumer: 'acme', environments: ['production'], createdAt: '2026-11-21T12:00:00.000Z', revoked: false };
const answered = { id: 'key_AAAAAAAAAAAA', environments: ['production'] as const, createdAt: '2026-11-21T12:00:00.000Z', revoked: false };

describe('toApiKey', () => {
  it('answers the holder as `consumer` and as its deprecated spelling `name`', () => {
    expect(toApiKey(record)).toEqual({ ...answered, consumer: 'acme', name: 'acme' });
  });

  it('answers the quotas where set, by the record’s names', () => {
    expect(toApiKey({ ...record, quotaPerDay: 10, quotaPerMonth: 300 })).toEqual({
      ...answered,
      consumer: 'acme',
      name: 'acme',
      quotaPerDay: 10,
      quotaPerMonth: 300,
    });
  });
});

describe('fromApiKey', () => {
  it('reads the holder from `consumer`', () => {
    expect(fromApiKey({ ...answered, consumer: 'acme', name: 'acme' })).toEqual(record);
  });

  it('reads the holder from `name` when a 1.0 gateway answers only that', () => {
    expect(fromApiKey({ ...answered, name: 'acme' })).toEqual(record);
  });

  it('reads the quotas back, in the order the Redis path prints a record', () => {
    const read = fromApiKey({ ...answered, consumer: 'acme', name: 'acme', rateLimitPerMinute: 5, quotaPerMonth: 300, quotaPerDay: 10, optIn: ['beta'] });
    expect(Object.keys(read)).toEqual([
      'id',
      'consumer',
      'environments',
      'createdAt',
      'revoked',
      'rateLimitPerMinute',
      'quotaPerDay',
      'quotaPerMonth',
      'optedIn',
    ]);
    expect(read).toEqual({ ...record, rateLimitPerMinute: 5, quotaPerDay: 10, quotaPerMonth: 300, optedIn: ['beta'] });
  });

  it('reads the holder from `consumer` when a later gateway answers only that', () => {
    expect(fromApiKey({ ...answered, consumer: 'acme' })).toEqual(record);
  });
});
