// The published JWKS: the signing key always, the previous key until the rotation's overlap ends.
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPem } from '../../../src/identity/generate-key.ts';
import { createJwks } from '../../../src/identity/jwks.ts';
import { signingKeyFromPem, type SigningKey } from '../../../src/identity/signing-key.ts';
import { fixedClock } from '../../../src/time/clock.ts';

const OVERLAP_END = new Date('2026-06-01T12:00:00Z');

let current: SigningKey;
let previous: SigningKey;
beforeAll(async () => {
  current = await signingKeyFromPem(generateSigningKeyPem('ed25519'), 'current');
  previous = await signingKeyFromPem(generateSigningKeyPem('es256'), 'previous');
});

describe('createJwks', () => {
  it('publishes the signing key alone when there is no rotation', () => {
    const jwks = createJwks({ current, clock: fixedClock(OVERLAP_END) });
    expect(jwks.document()).toEqual({ keys: [current.publicJwk] });
  });

  it('publishes the signing key first and the previous key during the overlap', () => {
    const jwks = createJwks({ current, previous: { key: previous, until: OVERLAP_END }, clock: fixedClock(OVERLAP_END.getTime() - 1) });
    expect(jwks.document()).toEqual({ keys: [current.publicJwk, previous.publicJwk] });
  });

  it("drops the previous key from the overlap's end on, without a restart", () => {
    const clock = fixedClock(OVERLAP_END.getTime() - 1);
    const jwks = createJwks({ current, previous: { key: previous, until: OVERLAP_END }, clock });
    expect(jwks.document().keys.map((key) => key.kid)).toEqual([current.kid, previous.kid]);
    clock.set(OVERLAP_END);
    expect(jwks.document()).toEqual({ keys: [current.publicJwk] });
  });

  it('publishes public members only, each key with kid, alg and use', () => {
    const jwks = createJwks({ current, previous: { key: previous, until: OVERLAP_END }, clock: fixedClock(0) });
    expect(JSON.parse(JSON.stringify(jwks.document()))).toEqual({
      keys: [
        { kty: 'OKP', crv: 'Ed25519', x: current.publicJwk.x, kid: current.kid, alg: 'EdDSA', use: 'sig' },
        { kty: 'EC', crv: 'P-256', x: previous.publicJwk.x, y: previous.publicJwk.y, kid: previous.kid, alg: 'ES256', use: 'sig' },
      ],
    });
  });
});
