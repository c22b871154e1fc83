// Key records as stored in Redis hashes: what a key opted in to reads back whole.
import { describe, expect, it } from 'vitest';
import { fromHashFields, toHashFields } from '../../../src/auth/key-records.ts';
import type { KeyRecord } from '../../../src/auth/key-store.ts';

const record: KeyRecord = { id: 'key_1', consumer: 'acme', environments: ['production'], createdAt: '2026-11-21T12:00:00.000Z', revoked: false };

describe('opted-in stability markers', () => {
  it('are stored as a list and read back', () => {
    const fields = toHashFields({ ...record, optedIn: ['experimental', 'beta'] });
    expect(fields.optedIn).toBe('experimental,beta');
    expect(fromHashFields(fields)).toEqual({ ...record, optedIn: ['experimental', 'beta'] });
  });

  it('are absent from a record that opted in to nothing', () => {
    expect(toHashFields({ ...record, optedIn: [] })).not.toHaveProperty('optedIn');
    expect(fromHashFields({ ...toHashFields(record), optedIn: '' })).toEqual(record);
  });

  it('drop markers the gateway does not know', () => {
    expect(fromHashFields({ ...toHashFields(record), optedIn: 'alpha,experimental' })).toEqual({ ...record, optedIn: ['experimental'] });
  });
});
