// Reading the bearer token from the Authorization header.
import { describe, expect, it } from 'vitest';
import { generateApiKey, hasApiKeyShape } from '../../../src/auth/api-key.ts';
import { readBearer } from '../../../src/auth/bearer.ts';
import { createKeyHasher } from '../../../src/auth/key-hash.ts';

describe('readBearer', () => {
  it.each([
    [undefined, { kind: 'missing' }],
    ['', { kind: 'missing' }],
    ['Bearer abc', { kind: 'token', token: 'abc' }],
    ['bearer abc', { kind: 'token', token: 'abc' }],
    ['BEARER  abc', { kind: 'token', token: 'abc' }],
    ['Bearer abc==', { kind: 'token', token: 'abc==' }],
    ['Bearer', { kind: 'malformed' }],
    ['Bearer ', { kind: 'malformed' }],
    ['Bearer a b', { kind: 'malformed' }],
    ['Basic abc', { kind: 'malformed' }],
    ['Bearerabc', { kind: 'malformed' }],
    [`Bearer ${'a'.repeat(300)}`, { kind: 'malformed' }],
  ])('%j is %o', (header, expected) => {
    expect(readBearer(header)).toEqual(expected);
  });
});

describe('API keys', () => {
  it('carry the live prefix when valid in production, the test prefix otherwise', () => {
    expect(generateApiKey(['production'])).toMatch(/^psk_live_[A-Za-z0-9_-]{43}$/);
    expect(generateApiKey(['staging', 'production'])).toMatch(/^psk_live_/);
    expect(generateApiKey(['staging'])).toMatch(/^psk_test_[A-Za-z0-9_-]{43}$/);
  });

  it('are never the same twice', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey(['staging'])));
    expect(keys.size).toBe(1000);
  });

  it('are recognised by shape', () => {
    expect(hasApiKeyShape(generateApiKey(['production']))).toBe(true);
    expect(hasApiKeyShape('psk_live_short')).toBe(false);
  });

  it('are stored as HMAC-SHA-256 with a pepper, SHA-256 without', () => {
    expect(createKeyHasher('pepper')('abc')).toBe('95ac8d48c4886bae06029b433c46c419019bf03a65a842069d84b7755b1d08c4');
    expect(createKeyHasher(undefined)('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
