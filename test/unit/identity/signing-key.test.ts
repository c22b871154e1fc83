// Loading the identity signing key: the key's type decides the algorithm; anything else stops start-up naming the setting.
import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KEY_FILE_SETTING, loadSigningKey, PREVIOUS_KEY_FILE_SETTING, SigningKeyError } from '../../../src/identity/signing-key.ts';

const dir = mkdtempSync(join(tmpdir(), 'signing-key-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function keyFile(name: string, pem: string): string {
  const file = join(dir, name);
  writeFileSync(file, pem, { mode: 0o600 });
  return file;
}

const ed25519 = generateKeyPairSync('ed25519');
const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' });

/** RFC 7638, computed by hand: SHA-256 of the required members in lexical order, no whitespace. */
function thumbprint(members: Record<string, string>): string {
  const canonical = JSON.stringify(
    Object.fromEntries(
      Object.keys(members)
        .sort()
        .map((name) => [name, members[name]]),
    ),
  );
  return createHash('sha256').update(canonical).digest('base64url');
}

describe('loadSigningKey', () => {
  it('reads an Ed25519 PKCS#8 key as EdDSA, with its RFC 7638 thumbprint as kid', async () => {
    const file = keyFile('ed25519.pem', ed25519.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    const key = await loadSigningKey(file);
    const { x } = ed25519.publicKey.export({ format: 'jwk' });
    const kid = thumbprint({ crv: 'Ed25519', kty: 'OKP', x: x! });
    expect(key.algorithm).toBe('EdDSA');
    expect(key.kid).toBe(kid);
    expect(key.publicJwk).toEqual({ kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' });
    expect(key.privateKey.extractable).toBe(false);
  });

  it('reads a P-256 PKCS#8 key as ES256, with its RFC 7638 thumbprint as kid', async () => {
    const file = keyFile('p256.pem', p256.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    const key = await loadSigningKey(file);
    const { x, y } = p256.publicKey.export({ format: 'jwk' });
    const kid = thumbprint({ crv: 'P-256', kty: 'EC', x: x!, y: y! });
    expect(key.algorithm).toBe('ES256');
    expect(key.kid).toBe(kid);
    expect(key.publicJwk).toEqual({ kty: 'EC', crv: 'P-256', x, y, kid, alg: 'ES256', use: 'sig' });
  });

  it('reads a P-256 key written as SEC1 ("BEGIN EC PRIVATE KEY") the same way', async () => {
    const pkcs8 = await loadSigningKey(keyFile('p256-pkcs8.pem', p256.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string));
    const sec1 = await loadSigningKey(keyFile('p256-sec1.pem', p256.privateKey.export({ type: 'sec1', format: 'pem' }) as string));
    expect(sec1.kid).toBe(pkcs8.kid);
  });

  it('publishes no private member', async () => {
    const key = await loadSigningKey(keyFile('ed25519-public.pem', ed25519.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string));
    expect(Object.keys(key.publicJwk).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x']);
    expect(Object.isFrozen(key.publicJwk)).toBe(true);
  });

  const refusals: Array<[string, () => string, SigningKeyError['code'], RegExp]> = [
    ['a missing file', () => join(dir, 'missing.pem'), 'unreadable', /could not be read: ENOENT/],
    ['a directory', () => dir, 'unreadable', /could not be read: EISDIR/],
    [
      'a public key',
      () => keyFile('public.pem', ed25519.publicKey.export({ type: 'spki', format: 'pem' }) as string),
      'public_key',
      /holds a public key or certificate; the gateway needs the private key/,
    ],
    [
      'an RSA key',
      () => keyFile('rsa.pem', generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string),
      'unsupported_key_type',
      /is a key of type rsa; use an Ed25519 or P-256 key \(npm run identity-key -- generate\)$/,
    ],
    [
      'a P-384 key',
      () => keyFile('p384.pem', generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string),
      'unsupported_key_type',
      /is an EC key on curve secp384r1; use an Ed25519 or P-256 key/,
    ],
    [
      'an Ed448 key',
      () => keyFile('ed448.pem', generateKeyPairSync('ed448').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string),
      'unsupported_key_type',
      /is a key of type ed448;/,
    ],
    [
      'an encrypted key',
      () => keyFile('encrypted.pem', ed25519.privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret' }) as string),
      'encrypted',
      /is an encrypted private key/,
    ],
    ['text that is no key', () => keyFile('garbage.pem', 'not a key\n'), 'not_a_private_key', /is not a PEM private key/],
    ['an empty file', () => keyFile('empty.pem', ''), 'not_a_private_key', /is not a PEM private key/],
  ];

  it.each(refusals)('refuses %s, naming UPSTREAM_IDENTITY_KEY_FILE (upstreamIdentity.keyFile)', async (_, file, code, reason) => {
    const path = file();
    const refusal = await loadSigningKey(path).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(SigningKeyError);
    expect((refusal as SigningKeyError).code).toBe(code);
    expect((refusal as Error).message.startsWith(`UPSTREAM_IDENTITY_KEY_FILE (upstreamIdentity.keyFile): ${path} `)).toBe(true);
    expect((refusal as Error).message).toMatch(reason);
  });

  it("names the previous key's own setting when that one is refused", async () => {
    const path = keyFile('previous-public.pem', p256.publicKey.export({ type: 'spki', format: 'pem' }) as string);
    await expect(loadSigningKey(path, PREVIOUS_KEY_FILE_SETTING)).rejects.toThrow(
      `UPSTREAM_IDENTITY_PREVIOUS_KEY_FILE (upstreamIdentity.previousKeyFile): ${path} holds a public key`,
    );
    expect(KEY_FILE_SETTING).toBe('UPSTREAM_IDENTITY_KEY_FILE (upstreamIdentity.keyFile)');
  });
});
