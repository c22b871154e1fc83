// Signed caller identity through the real gateway: the backend learns who called, and only the gateway can say so.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSampleBackend, type SampleBackend } from '../../src/demo/sample-backend.ts';
import { writeSigningKeyFile } from '../../src/identity/generate-key.ts';
import { loadUpstreamIdentity } from '../../src/identity/upstream-identity.ts';
import type { RunningGateway } from '../../src/server/server.ts';
import { buildTestGateway } from '../helpers/build-test-app.ts';
import { freshPorts } from '../../support/start-upstream.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { parseResponses, sendRaw } from '../helpers/raw-socket.ts';
import { PROJECT_ROOT, START_ARGS } from '../../support/start-gateway-process.ts';

const ISSUER = 'petstore-gateway';
const AUDIENCE = 'petstore-backend';

let dir: string;
let oldKeyFile: string;
let newKeyFile: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'identity-gateway-'));
  oldKeyFile = join(dir, 'old.pem');
  newKeyFile = join(dir, 'new.pem');
  await writeSigningKeyFile(oldKeyFile, 'ed25519');
  await writeSigningKeyFile(newKeyFile, 'es256');
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

/**
 * A gateway signing with `keyFile` (publishing `previous` until its end) in front of a sample backend that
 * verifies against the gateway's JWKS. Tokens are signed on a clock set to now: the backend checks them
 * against its own, real clock.
 */
async function signingGateway(settings: { keyFile: string; previousKeyFile?: string; previousKeyUntil?: string }, consumerHeaders = false) {
  const clock = fixedClock(Date.now());
  const upstreamIdentity = { previousKeyFile: null, previousKeyUntil: null, consumerHeaders, ...settings };
  const config = loadConfig({}, { upstreamIdentity });
  const identity = await loadUpstreamIdentity(config.upstreamIdentity, { environment: 'production', clock });
  // The backend checks tokens against the gateway's JWKS, and the gateway needs the backend's address: the backend
  // listens first (port 0), on the admin port the gateway will take (a fresh one: the admin listener's port is a setting).
  const [adminPort] = (await freshPorts(1)) as [number];
  const jwksUrl = `http://127.0.0.1:${adminPort}/.well-known/jwks.json`;
  const backend: SampleBackend = await startSampleBackend({ record: true, identity: { jwksUrl, issuer: ISSUER, audience: AUDIENCE } });
  const gateway = buildTestGateway({
    upstreamUrl: backend.baseUrl,
    env: { PORT: '0', ADMIN_PORT: String(adminPort) },
    overrides: { upstreamIdentity },
    identity,
  });
  const running: RunningGateway = await gateway.listen().catch(async (error: unknown) => {
    await backend.close();
    throw error;
  });
  return {
    gateway,
    clock,
    port: running.port,
    jwksUrl,
    backend,
    async close() {
      await running.shutdown('test over');
      await backend.close();
    },
  };
}

describe('a gateway with UPSTREAM_IDENTITY_KEY_FILE', () => {
  let setup: Awaited<ReturnType<typeof signingGateway>>;
  beforeAll(async () => {
    setup = await signingGateway({ keyFile: oldKeyFile });
  });
  afterAll(async () => setup.close());

  it("forwards requests with a token that verifies against its JWKS, sub naming each caller's key id", async () => {
    const second = setup.gateway.addKey({ id: 'key_second', consumer: 'globex' });
    const jwks = createRemoteJWKSet(new URL(setup.jwksUrl));
    for (const [key, keyId, consumer] of [
      [setup.gateway.apiKey, 'key_primary', 'acme'],
      [second, 'key_second', 'globex'],
    ] as const) {
      const res = await request(`http://127.0.0.1:${setup.port}`).get('/v1/pets?limit=1').set('Authorization', `Bearer ${key}`);
      expect(res.status).toBe(200);
      const token = setup.backend.received.at(-1)!.headers.authorization!.replace(/^Bearer /, '');
      const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer: ISSUER, audience: AUDIENCE, currentDate: new Date(setup.clock.now()) });
      expect(payload).toMatchObject({ sub: keyId, consumer, environment: 'production', operation_id: 'listPets' });
      expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(300);
      expect(protectedHeader).toMatchObject({ alg: 'EdDSA', typ: 'JWT' });
    }
  });

  it("never lets the client's own X-Consumer-* headers through", async () => {
    const res = await request(`http://127.0.0.1:${setup.port}`)
      .get('/v1/pets?limit=1')
      .set('Authorization', `Bearer ${setup.gateway.apiKey}`)
      .set('X-Consumer-Id', 'key_admin')
      .set('X-Consumer-Name', 'root');
    expect(res.status).toBe(200);
    const headers = setup.backend.received.at(-1)!.headers;
    expect(headers['x-consumer-id']).toBeUndefined();
    expect(headers['x-consumer-name']).toBeUndefined();
    expect(headers.authorization).not.toContain(setup.gateway.apiKey);
  });

  it('signs the request that waited for 100 Continue too', async () => {
    const pet = '{"name":"Nibbles","categoryId":4}';
    const answer = await sendRaw(
      setup.port,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${setup.gateway.apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${pet.length}\r\nExpect: 100-continue\r\n\r\n`,
      { afterFirstResponse: pet, responses: 1 },
    );
    expect(answer.statuses).toEqual([100, 201]);
    expect(parseResponses(answer.text).at(-1)!.status).toBe(201);
    expect(setup.backend.received.at(-1)!.headers.authorization).toMatch(/^Bearer eyJ/);
  });

  it('serves its public keys on the admin port only', async () => {
    const res = await fetch(setup.jwksUrl);
    expect(res.headers.get('content-type')).toBe('application/jwk-set+json; charset=utf-8');
    const document = (await res.json()) as { keys: Array<{ kid: string; alg: string; d?: string }> };
    expect(document.keys).toHaveLength(1);
    expect(document.keys[0]!.d).toBeUndefined();
    const publicSide = await request(`http://127.0.0.1:${setup.port}`).get('/.well-known/jwks.json');
    expect(publicSide.status).toBe(404);
  });
});

describe('rotating the signing key', () => {
  it('keeps tokens signed with the previous key verifying until the overlap ends', async () => {
    const before = await signingGateway({ keyFile: oldKeyFile });
    let oldToken: string;
    try {
      await request(`http://127.0.0.1:${before.port}`).get('/v1/pets?limit=1').set('Authorization', `Bearer ${before.gateway.apiKey}`);
      oldToken = before.backend.received.at(-1)!.headers.authorization!.replace(/^Bearer /, '');
    } finally {
      await before.close();
    }
    const overlapEnd = new Date(Date.now() + 3_600_000).toISOString();
    const after = await signingGateway({ keyFile: newKeyFile, previousKeyFile: oldKeyFile, previousKeyUntil: overlapEnd });
    try {
      const jwks = createRemoteJWKSet(new URL(after.jwksUrl));
      await expect(jwtVerify(oldToken, jwks, { issuer: ISSUER, audience: AUDIENCE, currentDate: new Date(after.clock.now()) })).resolves.toBeDefined();
      await request(`http://127.0.0.1:${after.port}`).get('/v1/pets?limit=1').set('Authorization', `Bearer ${after.gateway.apiKey}`);
      const newToken = after.backend.received.at(-1)!.headers.authorization!.replace(/^Bearer /, '');
      expect(decodeProtectedHeader(newToken).alg).toBe('ES256');
      // The overlap ends: the old key leaves the JWKS.
      after.clock.set(Date.parse(overlapEnd) + 1);
      const document = (await (await fetch(after.jwksUrl)).json()) as { keys: Array<{ kid: string }> };
      expect(document.keys.map((key) => key.kid)).toEqual([decodeProtectedHeader(newToken).kid]);
    } finally {
      await after.close();
    }
  });
});

describe('plain consumer headers (upstreamIdentity.consumerHeaders)', () => {
  it('are set by the gateway, overwriting whatever the client sent', async () => {
    const setup = await signingGateway({ keyFile: oldKeyFile }, true);
    try {
      await request(`http://127.0.0.1:${setup.port}`)
        .get('/v1/pets?limit=1')
        .set('Authorization', `Bearer ${setup.gateway.apiKey}`)
        .set('X-Consumer-Id', 'key_admin');
      expect(setup.backend.received.at(-1)!.headers).toMatchObject({ 'x-consumer-id': 'key_primary', 'x-consumer-name': 'acme' });
    } finally {
      await setup.close();
    }
  });
});

describe('start-up', () => {
  it('stops with a message naming the setting when the key file is a public key', async () => {
    const publicKey = join(dir, 'public.pem');
    const { createPublicKey, createPrivateKey } = await import('node:crypto');
    const { readFile, writeFile } = await import('node:fs/promises');
    await writeFile(publicKey, createPublicKey(createPrivateKey(await readFile(oldKeyFile))).export({ type: 'spki', format: 'pem' }));
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [...START_ARGS],
        {
          cwd: PROJECT_ROOT,
          env: {
            ...process.env,
            PORT: '0',
            ADMIN_PORT: '0',
            REDIS_URL: 'redis://127.0.0.1:1',
            API_KEY_PEPPER: 'p'.repeat(16),
            UPSTREAM_IDENTITY_KEY_FILE: publicKey,
          },
          timeout: 15_000,
        },
        (error, _stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stderr }),
      );
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^petstore-gateway: could not start: UPSTREAM_IDENTITY_KEY_FILE/);
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});
