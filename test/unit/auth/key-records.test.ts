// Key records as stored in Redis hashes: what a key opted in to reads back whole.
import { describe, expect, it } from 'vitest';
import { fromHashFields, keyLayout, toHashFields } from '../../../src/auth/key-records.ts';
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

// The names are data every replica and the keys CLI share: a changed one strands the keys stored under the old.
describe('keyLayout', () => {
  const layout = keyLayout('petstore:');
  it.each([
    ['a record, by key hash', layout.record('abc123'), 'petstore:{keys}:key:abc123'],
    ['a key hash, by key id', layout.byId('key_1'), 'petstore:{keys}:key-id:key_1'],
    ['every key id', layout.ids, 'petstore:{keys}:key-ids'],
    ['the pepper fingerprint', layout.pepperFingerprint, 'petstore:{keys}:pepper-fingerprint'],
    ['the change channel (pub/sub, no slot)', layout.events, 'petstore:key-events'],
  ])('%s: %s', (_case, name, expected) => {
    expect(name).toBe(expected);
  });
});
