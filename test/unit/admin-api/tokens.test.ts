// The admin token file: one token a line, each long enough, matched in constant time, named by a fingerprint.
import { describe, expect, it } from 'vitest';
import { parseAdminTokens, tokenFingerprint } from '../../../src/admin-api/tokens.ts';

const A = 'a'.repeat(32);
const B = `${'b'.repeat(40)}/+=`;

describe('parseAdminTokens', () => {
  it('matches each token of the file by its fingerprint', () => {
    const tokens = parseAdminTokens(`${A}\n${B}\n`);
    expect(tokens.count).toBe(2);
    expect(tokens.match(A)).toBe(tokenFingerprint(A));
    expect(tokens.match(B)).toBe(tokenFingerprint(B));
  });

  it('matches nothing else: a prefix, an extension, another case', () => {
    const tokens = parseAdminTokens(A);
    expect(tokens.match(A.slice(1))).toBeUndefined();
    expect(tokens.match(`${A}a`)).toBeUndefined();
    expect(tokens.match(A.toUpperCase())).toBeUndefined();
    expect(tokens.match('')).toBeUndefined();
  });

  it('trims lines and ignores blank ones and CRLF', () => {
    expect(parseAdminTokens(`\r\n  ${A}  \r\n\r\n`).match(A)).toBe(tokenFingerprint(A));
  });

  it('refuses a token shorter than 32 characters, naming its line and the variable', () => {
    expect(() => parseAdminTokens(`${A}\n\n${'c'.repeat(31)}\n`)).toThrow(
      'ADMIN_API_TOKEN_FILE (adminApi.tokenFile): the token on line 3 is shorter than 32 characters',
    );
  });

  it('refuses a token a Bearer header cannot carry', () => {
    expect(() => parseAdminTokens(`${A}!`)).toThrow(
      'ADMIN_API_TOKEN_FILE (adminApi.tokenFile): the token on line 1 cannot be sent as a Bearer token: use letters, digits and - . _ ~ + / (= only at the end), at most 256 characters',
    );
  });

  it('refuses a file without a token', () => {
    expect(() => parseAdminTokens('\n \n')).toThrow('ADMIN_API_TOKEN_FILE (adminApi.tokenFile): the file holds no token (one a line, at least 32 characters)');
  });
});

describe('tokenFingerprint', () => {
  it('is 12 hex digits of the SHA-256, never the token', () => {
    expect(tokenFingerprint(A)).toBe('3ba3f5f43b92');
    expect(tokenFingerprint(A)).not.toContain('aaaa');
  });
});
