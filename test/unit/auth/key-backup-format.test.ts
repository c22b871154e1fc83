// The key export's lines: what a version 1 reader takes, and why it refuses the rest (src/auth/key-backup-format.ts).
import { describe, expect, it } from 'vitest';
import { ExportLineError, exportedLine, parseHeader, parseKeyLine } from '../../../src/auth/key-backup-format.ts';
import type { KeyRecord } from '../../../src/auth/key-store.ts';

const HASH = 'a'.repeat(64);
const RECORD: KeyRecord = {
  id: 'key_abcdefghijkl',
  consumer: 'acme',
  environments: ['production'],
  createdAt: '2026-11-01T09:00:00.000Z',
  revoked: false,
  expiresAt: '2027-01-01T00:00:00.000Z',
  rateLimitPerMinute: 600,
  quotaPerDay: 10000,
  quotaPerMonth: 200000,
  optedIn: ['beta'],
  rotatedTo: 'key_mnopqrstuvwx',
};
const line = (change: Record<string, unknown>) => JSON.stringify({ ...JSON.parse(exportedLine(HASH, RECORD)), ...change });
const HEADER = { format: 'petstore-gateway-keys', version: 1, pepperFingerprint: 'hmac-sha256:00', exportedAt: '2026-11-26T21:00:00.000Z', keys: 1 };

describe('parseKeyLine', () => {
  it('writes the fields in the documented order', () => {
    expect(Object.keys(JSON.parse(exportedLine(HASH, RECORD)) as object)).toEqual([
      'keyHash',
      'id',
      'consumer',
      'environments',
      'createdAt',
      'expiresAt',
      'revoked',
      'rateLimitPerMinute',
      'quotaPerDay',
      'quotaPerMonth',
      'optedIn',
      'rotatedTo',
    ]);
  });

  it('reads back what exportedLine wrote, every field', () => {
    expect(parseKeyLine(exportedLine(HASH, RECORD))).toEqual({ keyHash: HASH, ...RECORD });
  });

  it('reads a line with only the fields every key has', () => {
    const minimal = { keyHash: HASH, id: 'key_abcdefghijkl', consumer: 'acme', environments: ['staging'], createdAt: RECORD.createdAt, revoked: true };
    expect(parseKeyLine(JSON.stringify(minimal))).toEqual(minimal);
  });

  it.each([
    ['not JSON', '{', 'not JSON'],
    ['an array', '[]', 'not a JSON object'],
    ['an unknown field', line({ key: 'psk_live_x' }), 'unknown field "key"'],
    ['a short hash', line({ keyHash: 'abc' }), 'keyHash is not 64 lowercase hex digits'],
    ['a bad id', line({ id: 'k1' }), 'id is not a key id'],
    ['a control character in the consumer', line({ consumer: 'a\u001bb' }), 'consumer: a consumer name holds'],
    ['an unknown environment', line({ environments: ['prod'] }), 'environments is not a list of production, staging'],
    ['no environment', line({ environments: [] }), 'environments is empty'],
    ['revoked as text', line({ revoked: 'no' }), 'revoked is not true or false'],
    ['a date without milliseconds', line({ createdAt: '2026-11-01T09:00:00Z' }), 'createdAt is not an ISO 8601 instant'],
    ['a zero limit', line({ rateLimitPerMinute: 0 }), 'rateLimitPerMinute is not a positive integer'],
    ['a fractional quota', line({ quotaPerDay: 1.5 }), 'quotaPerDay is not a positive integer'],
    ['an unknown marker', line({ optedIn: ['alpha'] }), 'optedIn is not a list of'],
  ])('refuses %s', (_what, text, message) => {
    expect(() => parseKeyLine(text)).toThrow(ExportLineError);
    expect(() => parseKeyLine(text)).toThrow(message);
  });
});

describe('parseHeader', () => {
  it('reads a header', () => {
    expect(parseHeader(JSON.stringify(HEADER))).toEqual(HEADER);
  });

  it.each([
    ['another format', { format: 'other' }, 'not a key export'],
    ['another version', { version: 2 }, 'version 2 is not one this CLI reads (1)'],
    ['no fingerprint', { pepperFingerprint: '' }, 'pepperFingerprint is missing'],
    ['a negative count', { keys: -1 }, 'keys is not a count'],
  ])('refuses %s', (_what, change, message) => {
    expect(() => parseHeader(JSON.stringify({ ...HEADER, ...change }))).toThrow(message);
  });
});
