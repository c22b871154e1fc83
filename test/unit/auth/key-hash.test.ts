// The handle a key is stored under: HMAC-SHA-256 with the pepper, SHA-256 without; the same however often it is asked.
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createKeyHasher, REMEMBERED_HMACS } from '../../../src/auth/key-hash.ts';

const PEPPER = 'test-pepper-0123456789';
const hmac = (key: string) => createHmac('sha256', PEPPER).update(key).digest('hex');
const keyNumbered = (n: number) => `psk_test_${String(n).padStart(43, '0')}`;

describe('createKeyHasher', () => {
  it('with a pepper, gives the HMAC-SHA-256 of the key in hex', () => {
    expect(createKeyHasher(PEPPER)('psk_test_abc')).toBe(hmac('psk_test_abc'));
  });

  it('without a pepper, gives the SHA-256 of the key in hex', () => {
    expect(createKeyHasher(undefined)('psk_test_abc')).toBe(createHash('sha256').update('psk_test_abc').digest('hex'));
  });

  it('gives the same handle for a key asked again (answered from what it remembers)', () => {
    const hashKey = createKeyHasher(PEPPER);
    expect([hashKey(keyNumbered(1)), hashKey(keyNumbered(1)), hashKey(keyNumbered(2))]).toEqual([
      hmac(keyNumbered(1)),
      hmac(keyNumbered(1)),
      hmac(keyNumbered(2)),
    ]);
  });

  it('gives every key its own handle, and the right one, after more keys than it remembers', () => {
    const hashKey = createKeyHasher(PEPPER);
    const count = REMEMBERED_HMACS + 10;
    for (let n = 0; n < count; n++) hashKey(keyNumbered(n));
    // The first keys were forgotten, the last ones remembered: both still hash as the HMAC.
    for (const n of [0, 1, 9, 10, count - 1]) expect(hashKey(keyNumbered(n))).toBe(hmac(keyNumbered(n)));
    expect(hashKey('psk_test_other')).toBe(hmac('psk_test_other'));
  });

  it('tells keys apart that differ in one character', () => {
    const hashKey = createKeyHasher(PEPPER);
    expect(hashKey('psk_test_a')).not.toBe(hashKey('psk_test_b'));
    expect(hashKey('psk_test_b')).toBe(hmac('psk_test_b'));
  });
});
