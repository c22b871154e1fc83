// Authentication at the edge: every request on /v1 needs a valid bearer API key, checked before anything else.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { buildTestGateway, TEST_NOW, type TestGateway } from '../helpers/build-test-app.ts';
import { startPetStore } from '../../support/start-upstream.ts';

let backend: SampleBackend;
let gateway: TestGateway;

beforeAll(async () => {
  backend = await startPetStore();
  gateway = buildTestGateway({ upstreamUrl: backend.baseUrl, environment: 'production' });
});
afterAll(async () => {
  gateway.close();
  await backend.close();
});

const CHALLENGE = 'Bearer realm="petstore"';

async function expectUnauthorized(authorization: string | undefined, message: string, challenge: string) {
  const before = backend.received.length;
  const call = request(gateway.app).get('/v1/pets');
  const res = await (authorization === undefined ? call : call.set('Authorization', authorization));
  expect(res.status).toBe(401);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.headers['www-authenticate']).toBe(challenge);
  expect(res.body).toEqual({ code: 'unauthorized', message, status: 401 });
  expect(backend.received.length).toBe(before);
}

describe('bearer authentication', () => {
  it('refuses a request without an Authorization header', async () => {
    await expectUnauthorized(undefined, 'An API key is required: send it as "Authorization: Bearer <API key>"', CHALLENGE);
  });

  it('refuses an Authorization header of another scheme', async () => {
    await expectUnauthorized('Basic dXNlcjpwYXNz', 'The Authorization header must have the form "Bearer <API key>"', `${CHALLENGE}, error="invalid_request"`);
  });

  it('refuses a bearer header without a token', async () => {
    await expectUnauthorized('Bearer ', 'The Authorization header must have the form "Bearer <API key>"', `${CHALLENGE}, error="invalid_request"`);
  });

  it('refuses an unknown key', async () => {
    await expectUnauthorized(`Bearer psk_live_${'A'.repeat(43)}`, 'The API key is not valid', `${CHALLENGE}, error="invalid_token"`);
  });

  it('refuses a token that is not of the issued key form', async () => {
    await expectUnauthorized('Bearer not-a-key', 'The API key is not valid', `${CHALLENGE}, error="invalid_token"`);
  });

  it('refuses a revoked key', async () => {
    const key = gateway.addKey({ revoked: true });
    await expectUnauthorized(`Bearer ${key}`, 'The API key has been revoked', `${CHALLENGE}, error="invalid_token"`);
  });

  it('refuses an expired key', async () => {
    const key = gateway.addKey({ expiresAt: new Date(TEST_NOW - 1).toISOString() });
    await expectUnauthorized(`Bearer ${key}`, 'The API key has expired', `${CHALLENGE}, error="invalid_token"`);
  });

  it('accepts a key that expires later', async () => {
    const key = gateway.addKey({ expiresAt: new Date(TEST_NOW + 1000).toISOString() });
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${key}`);
    expect(res.status).toBe(200);
  });

  it('refuses a key valid only in the other environment', async () => {
    const key = gateway.addKey({ environments: ['staging'] });
    await expectUnauthorized(`Bearer ${key}`, 'The API key is not valid in this environment', `${CHALLENGE}, error="invalid_token"`);
  });

  it('accepts the scheme name in any case', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      const res = await request(gateway.app).get('/v1/pets').set('Authorization', `${scheme} ${gateway.apiKey}`);
      expect(res.status).toBe(200);
    }
  });

  it('authenticates before validating, so a bad request from an unknown caller is 401, not 400', async () => {
    const res = await request(gateway.app).get('/v1/pets?limit=abc');
    expect(res.status).toBe(401);
  });

  it('authenticates before routing, so an unknown path under /v1 is 401 for an unknown caller', async () => {
    const res = await request(gateway.app).get('/v1/store/orders');
    expect(res.status).toBe(401);
  });

  it('never forwards the Authorization header to the upstream', async () => {
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`);
    expect(res.status).toBe(200);
    const forwarded = backend.received.at(-1)!;
    expect(forwarded.headers.authorization).toBeUndefined();
    expect(JSON.stringify(forwarded)).not.toContain(gateway.apiKey);
  });

  it('never writes the key to the log', async () => {
    await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`);
    await request(gateway.app).get('/v1/nowhere').set('Authorization', `Bearer ${gateway.apiKey}`);
    expect(gateway.rawLogs()).not.toContain(gateway.apiKey);
    expect(gateway.rawLogs()).not.toContain(gateway.apiKey.slice('psk_live_'.length));
  });

  it('logs the consumer and key id of an authenticated request', async () => {
    await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`).set('X-Request-Id', 'trace-auth-0001');
    const line = gateway.logs.find((entry) => entry.reqId === 'trace-auth-0001');
    expect(line).toMatchObject({ keyId: 'key_primary', consumer: 'acme', operation: 'listPets', res: { statusCode: 200 } });
  });
});
