// The pepper fingerprint: an HMAC of a fixed label under the pepper, never the pepper; "none" without one.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createKeyHasher } from '../../../src/auth/key-hash.ts';
import { describePepperMismatch, NO_PEPPER, pepperFingerprint } from '../../../src/auth/pepper-fingerprint.ts';

const PEPPER = 'fingerprint-test-pepper-01';

describe('pepperFingerprint', () => {
  it('is the HMAC-SHA-256 of a fixed label under the pepper, and does not contain it', () => {
    const expected = createHmac('sha256', PEPPER).update('petstore-gateway pepper fingerprint v1').digest('hex');
    expect(pepperFingerprint(PEPPER)).toBe(`hmac-sha256:${expected}`);
    expect(pepperFingerprint(PEPPER)).not.toContain(PEPPER);
  });

  it('is "none" without a pepper, so unpeppered and peppered differ', () => {
    expect(pepperFingerprint(undefined)).toBe(NO_PEPPER);
    expect(pepperFingerprint(PEPPER)).not.toBe(pepperFingerprint(`${PEPPER}x`));
  });

  it('travels with the hasher made from the same pepper', () => {
    expect(createKeyHasher(PEPPER).pepperFingerprint).toBe(pepperFingerprint(PEPPER));
    expect(createKeyHasher(undefined).pepperFingerprint).toBe(NO_PEPPER);
  });
});

describe('describePepperMismatch', () => {
  it.each([
    [
      NO_PEPPER,
      pepperFingerprint(PEPPER),
      'the API keys in this Redis were made without a pepper, but one is set (API_KEY_PEPPER or API_KEY_PEPPER_FILE): unset it, or re-issue the keys with it',
    ],
    [
      pepperFingerprint(PEPPER),
      NO_PEPPER,
      "the API keys in this Redis were made with a pepper, but none is set: set API_KEY_PEPPER_FILE (or API_KEY_PEPPER) to the gateways' pepper",
    ],
    [
      pepperFingerprint(PEPPER),
      pepperFingerprint(`${PEPPER}x`),
      "the pepper (API_KEY_PEPPER or API_KEY_PEPPER_FILE) differs from the one the API keys in this Redis were made with: use the gateways' pepper",
    ],
  ])('stored %s, mine %s', (stored, mine, message) => {
    expect(describePepperMismatch(stored, mine)).toBe(message);
  });
});
