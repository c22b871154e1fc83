// The sample backend checks the gateway's caller identity token against a JWKS served over HTTP, as a real backend would.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSampleBackend, type SampleBackend, type SampleBackendIdentity } from '../../src/demo/sample-backend.ts';
import { generateSigningKeyPem } from '../../src/identity/generate-key.ts';
import { createIdentitySigner, type IdentitySignerOptions } from '../../src/identity/identity-signer.ts';
import { createJwks, type Jwks } from '../../src/identity/jwks.ts';
import { signingKeyFromPem, type SigningKey } from '../../src/identity/signing-key.ts';
import { fixedClock, systemClock } from '../../src/time/clock.ts';

const ISSUER = 'petstore-gateway';
const AUDIENCE = 'petstore-backend';
const acme = { keyId: 'key_acme', consumer: 'acme', operationId: 'listPets' };

let current: SigningKey;
let previous: SigningKey;
let stranger: SigningKey;
/** What the JWKS server publishes; a test may swap it. */
let published: Jwks;
let jwksServer: Server;
let jwksUrl: string;
const backends: SampleBackend[] = [];

beforeAll(async () => {
  [current, previous, stranger] = await Promise.all([
    signingKeyFromPem(generateSigningKeyPem('ed25519'), 'current'),
    signingKeyFromPem(generateSigningKeyPem('es256'), 'previous'),
    signingKeyFromPem(generateSigningKeyPem('ed25519'), 'stranger'),
  ]);
  jwksServer = createServer((req, res) => {
    if (req.url !== '/.well-known/jwks.json') {
      res.writeHead(404).end();
      return;
    }
    const body = JSON.stringify(published.document());
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) }).end(body);
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/.well-known/jwks.json`;
});

afterEach(async () => {
  await Promise.all(backends.splice(0).map((backend) => backend.close()));
});

afterAll(async () => {
  jwksServer.closeAllConnections();
  await new Promise((resolve) => jwksServer.close(resolve));
});

async function backendVerifying(identity: Partial<SampleBackendIdentity> = {}) {
  const logged: Array<Record<string, unknown>> = [];
  const backend = await startSampleBackend({
    record: true,
    identity: { jwksUrl, issuer: ISSUER, audience: AUDIENCE, ...identity },
    log: (line) => logged.push(line),
  });
  backends.push(backend);
  return { backend, logged };
}

function tokenFor(options: Partial<IdentitySignerOptions> = {}, caller = acme): Promise<string> {
  return createIdentitySigner({ key: current, issuer: ISSUER, audience: AUDIENCE, environment: 'staging', ...options }).tokenFor(caller);
}

function listPets(backend: SampleBackend, authorization?: string): Promise<Response> {
  return fetch(`${backend.baseUrl}/pets?limit=1`, authorization === undefined ? {} : { headers: { Authorization: authorization } });
}

const refused = (message: string) => ({ code: 'unauthorized', message, status: 401 });

describe('sample backend with caller identity', () => {
  beforeAll(() => {
    published = createJwks({ current });
  });

  it('serves a request that carries a valid token and records its caller', async () => {
    const { backend } = await backendVerifying();
    const res = await listPets(backend, `Bearer ${await tokenFor()}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }]);
    expect(backend.received.map((request) => request.caller)).toEqual([{ sub: 'key_acme', consumer: 'acme' }]);
  });

  it('logs the caller that created a pet', async () => {
    const { backend, logged } = await backendVerifying();
    const token = await tokenFor({}, { keyId: 'key_zoe', consumer: 'Zoë', operationId: 'createPet' });
    const res = await fetch(`${backend.baseUrl}/pets`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Nibbles', categoryId: 4 }),
    });
    expect(res.status).toBe(201);
    expect(logged).toEqual([{ msg: 'pet created', petId: 6, name: 'Nibbles', caller: { sub: 'key_zoe', consumer: 'Zoë' } }]);
  });

  it('refuses a request without a token with 401 and an Error body', async () => {
    const { backend, logged } = await backendVerifying();
    const res = await fetch(`${backend.baseUrl}/pets`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"name":"Ghost","categoryId":1}',
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(await res.json()).toEqual(refused('A caller identity token from the gateway is required (Authorization: Bearer)'));
    expect(logged).toEqual([]);
    expect(await (await listPets(backend, `Bearer ${await tokenFor()}`)).json()).toHaveLength(1);
  });

  it("refuses a client's API key in place of the gateway's token", async () => {
    const { backend } = await backendVerifying();
    const res = await listPets(backend, 'Bearer psk_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(refused('Caller identity token refused: Invalid Compact JWS'));
  });

  it('refuses an expired token', async () => {
    const { backend } = await backendVerifying();
    const token = await tokenFor({ clock: fixedClock(Date.now() - 10 * 60_000) });
    const res = await listPets(backend, `Bearer ${token}`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(refused('Caller identity token refused: "exp" claim timestamp check failed'));
  });

  it('accepts a token expired by less than the clock tolerance (5 s)', async () => {
    const { backend } = await backendVerifying();
    const token = await tokenFor({ ttlSeconds: 120, clock: fixedClock(systemClock.now() - 123_000) });
    expect((await listPets(backend, `Bearer ${token}`)).status).toBe(200);
  });

  it('refuses a tampered token', async () => {
    const { backend } = await backendVerifying();
    const [header, payload, signature] = (await tokenFor()).split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'key_admin' })).toString('base64url');
    const res = await listPets(backend, `Bearer ${header}.${forged}.${signature}`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(refused('Caller identity token refused: signature verification failed'));
  });

  it('refuses a token for another audience', async () => {
    const { backend } = await backendVerifying();
    const res = await listPets(backend, `Bearer ${await tokenFor({ audience: 'billing-backend' })}`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(await res.json()).toEqual(refused('Caller identity token refused: unexpected "aud" claim value'));
  });

  it('refuses a token from another issuer', async () => {
    const { backend } = await backendVerifying();
    const res = await listPets(backend, `Bearer ${await tokenFor({ issuer: 'someone-else' })}`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(refused('Caller identity token refused: unexpected "iss" claim value'));
  });

  it('refuses a token signed with a key the JWKS does not publish (unknown kid)', async () => {
    const { backend } = await backendVerifying();
    const res = await listPets(backend, `Bearer ${await tokenFor({ key: stranger })}`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(refused('Caller identity token refused: no applicable key found in the JSON Web Key Set'));
  });

  it("answers 503 when the JWKS cannot be fetched: its own trouble, not the caller's", async () => {
    const { backend } = await backendVerifying({ jwksUrl: jwksUrl.replace('/.well-known/jwks.json', '/missing') });
    const res = await listPets(backend, `Bearer ${await tokenFor()}`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      code: 'service_unavailable',
      message: "Caller identity cannot be checked: the gateway's JWKS is unavailable (Expected 200 OK from the JSON Web Key Set HTTP response)",
      status: 503,
    });
  });
});

describe('sample backend during a key rotation', () => {
  const overlapEnd = Date.now() + 60_000;
  const jwksClock = fixedClock(overlapEnd - 1);

  beforeAll(() => {
    published = createJwks({ current, previous: { key: previous, until: new Date(overlapEnd) }, clock: jwksClock });
  });

  it('accepts tokens signed with the new and the previous key during the overlap', async () => {
    const { backend } = await backendVerifying();
    expect((await listPets(backend, `Bearer ${await tokenFor({ key: current })}`)).status).toBe(200);
    expect((await listPets(backend, `Bearer ${await tokenFor({ key: previous })}`)).status).toBe(200);
  });

  it('refuses tokens signed with the previous key once the overlap has ended (a backend fetching the JWKS from then on)', async () => {
    jwksClock.set(overlapEnd);
    const { backend } = await backendVerifying();
    expect((await listPets(backend, `Bearer ${await tokenFor({ key: current })}`)).status).toBe(200);
    const res = await listPets(backend, `Bearer ${await tokenFor({ key: previous })}`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual(refused('Caller identity token refused: no applicable key found in the JSON Web Key Set'));
  });
});
