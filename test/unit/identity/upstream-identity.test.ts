// From the upstreamIdentity settings to the headers sent upstream and the JWKS published; refusals name the setting.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { writeSigningKeyFile } from '../../../src/identity/generate-key.ts';
import { loadUpstreamIdentity, type UpstreamIdentitySettings } from '../../../src/identity/upstream-identity.ts';
import type { SigningKey } from '../../../src/identity/signing-key.ts';
import { fixedClock } from '../../../src/time/clock.ts';

const NOW = Date.parse('2026-06-01T11:00:00Z');
const caller = { keyId: 'key_acme', consumer: 'Zoë', operationId: 'createPet' };
const dir = mkdtempSync(join(tmpdir(), 'upstream-identity-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let current: SigningKey;
let previous: SigningKey;
beforeAll(async () => {
  current = await writeSigningKeyFile(join(dir, 'current.pem'), 'ed25519');
  previous = await writeSigningKeyFile(join(dir, 'previous.pem'), 'es256');
});

/** Settings as loadConfig yields them from the file's defaults and these values. */
function settings(values: Record<string, unknown>): UpstreamIdentitySettings {
  return loadConfig({}, { upstreamIdentity: values }).upstreamIdentity;
}

describe('loadUpstreamIdentity', () => {
  it('signs nothing and adds no header when keyFile is not set', async () => {
    const identity = await loadUpstreamIdentity(settings({}), { environment: 'staging' });
    expect(await identity.headersFor(caller)).toEqual({});
    expect(identity.jwks).toBeNull();
    expect(identity.signer).toBeNull();
    expect(identity.summary).toEqual({ signing: false, consumerHeaders: false });
  });

  it('sends only the plain consumer headers when they are on without a key', async () => {
    const identity = await loadUpstreamIdentity(settings({ consumerHeaders: true }), { environment: 'staging' });
    expect(await identity.headersFor(caller)).toEqual({ 'x-consumer-id': 'key_acme', 'x-consumer-name': 'Zo%C3%AB' });
  });

  it('sends a bearer token that verifies with the JWKS it publishes', async () => {
    const clock = fixedClock(NOW);
    const identity = await loadUpstreamIdentity(settings({ keyFile: join(dir, 'current.pem') }), { environment: 'production', clock });
    const headers = await identity.headersFor(caller);
    expect(Object.keys(headers)).toEqual(['authorization']);
    const token = headers.authorization!.replace(/^Bearer /, '');
    const { payload } = await jwtVerify(token, createLocalJWKSet({ keys: [...identity.jwks!.document().keys] }), {
      issuer: 'petstore-gateway',
      audience: 'petstore-backend',
      currentDate: new Date(NOW),
    });
    expect(payload).toMatchObject({ sub: 'key_acme', consumer: 'Zoë', environment: 'production', operation_id: 'createPet', exp: NOW / 1000 + 120 });
    expect(identity.summary).toEqual({
      signing: true,
      consumerHeaders: false,
      algorithm: 'EdDSA',
      kid: current.kid,
      issuer: 'petstore-gateway',
      audience: 'petstore-backend',
      ttlSeconds: 120,
      previousKid: null,
      previousKeyUntil: null,
    });
  });

  it('sends the token and the consumer headers when both are on', async () => {
    const identity = await loadUpstreamIdentity(settings({ keyFile: join(dir, 'current.pem'), consumerHeaders: true }), { environment: 'staging' });
    expect(Object.keys(await identity.headersFor(caller))).toEqual(['authorization', 'x-consumer-id', 'x-consumer-name']);
  });

  it('publishes the previous key until previousKeyUntil during a rotation', async () => {
    const clock = fixedClock(NOW);
    const identity = await loadUpstreamIdentity(
      settings({ keyFile: join(dir, 'current.pem'), previousKeyFile: join(dir, 'previous.pem'), previousKeyUntil: '2026-06-01T12:00:00Z' }),
      { environment: 'staging', clock },
    );
    expect(identity.jwks!.document().keys.map((key) => key.kid)).toEqual([current.kid, previous.kid]);
    expect(identity.summary).toMatchObject({ previousKid: previous.kid, previousKeyUntil: '2026-06-01T12:00:00.000Z' });
    clock.set(Date.parse('2026-06-01T12:00:00Z'));
    expect(identity.jwks!.document().keys.map((key) => key.kid)).toEqual([current.kid]);
  });

  it('refuses a bad key file, naming UPSTREAM_IDENTITY_KEY_FILE', async () => {
    await expect(loadUpstreamIdentity(settings({ keyFile: join(dir, 'missing.pem') }), { environment: 'staging' })).rejects.toThrow(
      /^UPSTREAM_IDENTITY_KEY_FILE \(upstreamIdentity\.keyFile\): .*missing\.pem could not be read/,
    );
  });

  it('refuses a bad previous key file, naming UPSTREAM_IDENTITY_PREVIOUS_KEY_FILE', async () => {
    const values = { keyFile: join(dir, 'current.pem'), previousKeyFile: join(dir, 'missing.pem'), previousKeyUntil: '2026-06-01T12:00:00Z' };
    await expect(loadUpstreamIdentity(settings(values), { environment: 'staging' })).rejects.toThrow(
      /^UPSTREAM_IDENTITY_PREVIOUS_KEY_FILE \(upstreamIdentity\.previousKeyFile\): .*missing\.pem could not be read/,
    );
  });

  it('refuses the signing key given again as the previous key', async () => {
    const values = { keyFile: join(dir, 'current.pem'), previousKeyFile: join(dir, 'current.pem'), previousKeyUntil: '2026-06-01T12:00:00Z' };
    await expect(loadUpstreamIdentity(settings(values), { environment: 'staging' })).rejects.toThrow(
      /^UPSTREAM_IDENTITY_PREVIOUS_KEY_FILE \(upstreamIdentity\.previousKeyFile\): .*current\.pem is the same key as UPSTREAM_IDENTITY_KEY_FILE/,
    );
  });
});

describe('upstreamIdentity settings', () => {
  it('default to off, with the documented issuer, audience and lifetime', () => {
    expect(loadConfig({}).upstreamIdentity).toEqual({
      keyFile: null,
      previousKeyFile: null,
      previousKeyUntil: null,
      issuer: 'petstore-gateway',
      audience: 'petstore-backend',
      ttlSeconds: 120,
      maxCachedTokens: 10_000,
      consumerHeaders: false,
    });
  });

  it.each([
    [{ ttlSeconds: 301 }, 'upstreamIdentity.ttlSeconds: must be at most 300'],
    [{ ttlSeconds: 10 }, 'upstreamIdentity.ttlSeconds: must be at least 30'],
    [{ consumerHeaders: 'yes' }, 'upstreamIdentity.consumerHeaders'],
    [{ issuer: '' }, 'upstreamIdentity.issuer'],
    [{ keyFile: '/k.pem', previousKeyFile: '/p.pem' }, 'upstreamIdentity.previousKeyUntil: set previousKeyFile and previousKeyUntil together'],
    [{ keyFile: '/k.pem', previousKeyUntil: '2026-06-01T12:00:00Z' }, 'upstreamIdentity.previousKeyUntil: set previousKeyFile and previousKeyUntil together'],
    [
      { keyFile: '/k.pem', previousKeyFile: '/p.pem', previousKeyUntil: 'tomorrow' },
      'upstreamIdentity.previousKeyUntil: must be a date and time with its offset (ISO 8601), such as 2027-01-01T00:00:00Z',
    ],
    [{ previousKeyFile: '/p.pem', previousKeyUntil: '2026-06-01T12:00:00Z' }, 'upstreamIdentity.keyFile: a previous key needs a current key'],
  ])('stop start-up on %o, naming the key', (values, named) => {
    expect(() => loadConfig({}, { upstreamIdentity: values })).toThrow(named);
  });
});
