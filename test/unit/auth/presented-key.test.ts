// The key a request presents: the character-at-a-time reading agrees with the bearer and key-shape expressions.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateApiKey, hasApiKeyShape } from '../../../src/auth/api-key.ts';
import { readBearer } from '../../../src/auth/bearer.ts';
import { readPresentedKey } from '../../../src/auth/presented-key.ts';

/** What the two expressions say of a header: the definition readPresentedKey must agree with. */
function byExpressions(authorization: string | undefined) {
  const bearer = readBearer(authorization);
  if (bearer.kind !== 'token') return bearer;
  return hasApiKeyShape(bearer.token) ? { kind: 'key', key: bearer.token } : { kind: 'unknown' };
}

const keyCharacter = fc.constantFrom(...'aZ09-_+/.~=é K\u017f\u212a'.split(''));
/** Keys and near-keys: an issued key with a character changed, cut short, made longer, or another prefix. */
const token = fc.oneof(
  fc
    .constantFrom('psk_live_', 'psk_test_', 'PSK_live_', 'psk_prod_', 'psk_live', '')
    .chain((prefix) => fc.array(keyCharacter, { minLength: 40, maxLength: 46 }).map((characters) => prefix + characters.join(''))),
  fc.tuple(fc.constantFrom(['production'] as const, ['staging'] as const), fc.nat(53), keyCharacter).map(([environments, at, character]) => {
    const key = generateApiKey([...environments]);
    return key.slice(0, at) + character + key.slice(at + 1);
  }),
  fc.constantFrom(['production'] as const, ['staging'] as const).map((environments) => generateApiKey([...environments])),
);
const scheme = fc.constantFrom('Bearer ', 'bearer ', 'BEARER  ', 'Bearer', 'Basic ', 'Bearer\t', ' Bearer ');
const header = fc.oneof(
  // The form read a character at a time: the scheme as written, one space, the token and nothing after it.
  { arbitrary: token.map((key) => `Bearer ${key}`), weight: 3 },
  fc.tuple(scheme, token, fc.constantFrom('', ' ', '  ', '=', '\t')).map(([before, key, after]) => before + key + after),
  fc.constantFrom(undefined, '', 'Bearer ', 'Bearer'),
  fc.string(),
);

describe('readPresentedKey', () => {
  it('is what the bearer and key-shape expressions say, for keys, near-keys and other headers', () => {
    fc.assert(
      fc.property(header, (authorization) => {
        expect(readPresentedKey(authorization)).toEqual(byExpressions(authorization));
      }),
      { numRuns: 5000 },
    );
  });

  it.each([
    ['production', 'key'],
    ['staging', 'key'],
  ] as const)('reads an issued %s key sent as "Bearer <key>"', (environment, kind) => {
    const key = generateApiKey([environment]);
    expect(readPresentedKey(`Bearer ${key}`)).toEqual({ kind, key });
  });

  it.each([
    [undefined, 'missing'],
    ['', 'missing'],
    ['Basic abc', 'malformed'],
    ['Bearer abc', 'unknown'],
  ] as const)('%j is %s', (authorization, kind) => {
    expect(readPresentedKey(authorization)).toEqual({ kind });
  });
});
