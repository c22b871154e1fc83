// The identity signer: exact claims and header, one signature per caller and operation for most of a token's life.
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPem } from '../../../src/identity/generate-key.ts';
import { createIdentitySigner, type IdentitySignerOptions } from '../../../src/identity/identity-signer.ts';
import { signingKeyFromPem, type SigningKey } from '../../../src/identity/signing-key.ts';
import { fixedClock } from '../../../src/time/clock.ts';

const START = Date.parse('2026-05-01T10:00:00.400Z');
const IAT = Math.floor(START / 1000);
const acme = { keyId: 'key_acme', consumer: 'acme', operationId: 'listPets' };

let ed25519: SigningKey;
let p256: SigningKey;
beforeAll(async () => {
  ed25519 = await signingKeyFromPem(generateSigningKeyPem('ed25519'), 'test key');
  p256 = await signingKeyFromPem(generateSigningKeyPem('es256'), 'test key');
});

/** A signer on a fixed clock that counts its signatures and lets a test wait for the next one. */
function signerAt(overrides: Partial<IdentitySignerOptions> = {}) {
  const clock = fixedClock(START);
  const state = { signatures: 0, waiting: [] as Array<() => void> };
  const signer = createIdentitySigner({
    key: ed25519,
    issuer: 'petstore-gateway',
    audience: 'petstore-backend',
    environment: 'staging',
    ttlSeconds: 120,
    clock,
    onSigned: () => {
      state.signatures++;
      for (const resolve of state.waiting.splice(0)) resolve();
    },
    ...overrides,
  });
  return {
    signer,
    clock,
    signatures: () => state.signatures,
    nextSignature: () => new Promise<void>((resolve) => state.waiting.push(resolve)),
  };
}

describe('createIdentitySigner', () => {
  it("signs the caller's claims, with alg, kid and typ in the header", async () => {
    const { signer } = signerAt();
    const token = await signer.tokenFor(acme);
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'EdDSA', kid: ed25519.kid, typ: 'JWT' });
    expect(decodeJwt(token)).toEqual({
      iss: 'petstore-gateway',
      aud: 'petstore-backend',
      sub: 'key_acme',
      consumer: 'acme',
      environment: 'staging',
      operation_id: 'listPets',
      iat: IAT,
      exp: IAT + 120,
      jti: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
    });
  });

  it.each([
    ['Ed25519', () => ed25519, 'EdDSA'],
    ['P-256', () => p256, 'ES256'],
  ] as const)('signs tokens that verify with the published %s key', async (_, key, alg) => {
    const { signer } = signerAt({ key: key() });
    const token = await signer.tokenFor(acme);
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet({ keys: [key().publicJwk] }), {
      issuer: 'petstore-gateway',
      audience: 'petstore-backend',
      currentDate: new Date(START),
    });
    expect(protectedHeader.alg).toBe(alg);
    expect(payload.sub).toBe('key_acme');
  });

  it('reuses one token for a caller and operation while two thirds of its lifetime have not passed', async () => {
    const { signer, clock, signatures } = signerAt();
    const first = await signer.tokenFor(acme);
    for (const elapsed of [0, 1000, 40_000, 79_599]) {
      clock.set(START + elapsed);
      expect(await signer.tokenFor(acme)).toBe(first);
    }
    expect(signatures()).toBe(1);
  });

  it('signs one token per API key, per operation and per consumer name', async () => {
    const { signer, signatures } = signerAt();
    const tokens = await Promise.all([
      signer.tokenFor(acme),
      signer.tokenFor({ ...acme, keyId: 'key_other' }),
      signer.tokenFor({ ...acme, operationId: 'createPet' }),
      signer.tokenFor({ ...acme, consumer: 'acme renamed' }),
    ]);
    expect(new Set(tokens).size).toBe(4);
    expect(tokens.map((token) => decodeJwt(token).sub)).toEqual(['key_acme', 'key_other', 'key_acme', 'key_acme']);
    expect(decodeJwt(tokens[2]!).operation_id).toBe('createPet');
    expect(signatures()).toBe(4);
  });

  it('lets concurrent first requests share one signature', async () => {
    const { signer, signatures } = signerAt();
    const [a, b, c] = await Promise.all([signer.tokenFor(acme), signer.tokenFor(acme), signer.tokenFor(acme)]);
    expect(b).toBe(a);
    expect(c).toBe(a);
    expect(signatures()).toBe(1);
  });

  it('past two thirds of the lifetime, still answers with the cached token and signs its successor in the background', async () => {
    const { signer, clock, signatures, nextSignature } = signerAt();
    const first = await signer.tokenFor(acme);
    clock.set(START + 80_000);
    const successor = nextSignature();
    expect(await signer.tokenFor(acme)).toBe(first);
    expect(await signer.tokenFor(acme)).toBe(first);
    await successor;
    const second = await signer.tokenFor(acme);
    expect(second).not.toBe(first);
    expect(decodeJwt(second)).toMatchObject({ iat: IAT + 80, exp: IAT + 200 });
    expect(signatures()).toBe(2);
  });

  it('never hands out a token in the last sixth of its lifetime: an idle caller waits for a new one', async () => {
    const { signer, clock, signatures } = signerAt();
    const first = await signer.tokenFor(acme);
    clock.set(START + 100_000);
    const second = await signer.tokenFor(acme);
    expect(second).not.toBe(first);
    expect(decodeJwt(second)).toMatchObject({ iat: IAT + 100, exp: IAT + 220 });
    expect(signatures()).toBe(2);
  });

  it('keeps at most maxCachedTokens tokens, dropping the least recently used', async () => {
    const { signer, signatures } = signerAt({ maxCachedTokens: 2 });
    const a = await signer.tokenFor(acme);
    const b = await signer.tokenFor({ ...acme, keyId: 'key_b' });
    expect(await signer.tokenFor(acme)).toBe(a);
    await signer.tokenFor({ ...acme, keyId: 'key_c' });
    expect(signatures()).toBe(3);
    expect(await signer.tokenFor(acme)).toBe(a);
    expect(await signer.tokenFor({ ...acme, keyId: 'key_b' })).not.toBe(b);
    expect(signatures()).toBe(4);
  });

  it('rejects when signing fails, and caches no failure', async () => {
    // An Ed25519 key presented as ES256: jose refuses to sign with it.
    const mismatched = { ...ed25519, algorithm: 'ES256' as const };
    const { signer, signatures } = signerAt({ key: mismatched });
    const first = await signer.tokenFor(acme).catch((error: unknown) => error);
    const second = await signer.tokenFor(acme).catch((error: unknown) => error);
    expect(first).toBeInstanceOf(TypeError);
    expect(second).toBeInstanceOf(TypeError);
    expect(second).not.toBe(first);
    expect(signatures()).toBe(0);
  });

  it.each([
    [{ ttlSeconds: 301 }, 'ttlSeconds must be an integer from 1 to 300, not 301'],
    [{ ttlSeconds: 0 }, 'ttlSeconds must be an integer from 1 to 300, not 0'],
    [{ ttlSeconds: 1.5 }, 'ttlSeconds must be an integer from 1 to 300, not 1.5'],
    [{ maxCachedTokens: 0 }, 'maxCachedTokens must be a positive integer, not 0'],
    [{ issuer: '' }, 'issuer and audience must not be empty'],
  ])('refuses %o at construction', (options, message) => {
    expect(() => signerAt(options)).toThrow(message);
  });
});
