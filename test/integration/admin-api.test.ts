// The admin API on the admin listener, against a real Redis: tokens, failed-attempt limit, each endpoint, the audit trail, /deprecations guarded.
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { tokenFingerprint } from '../../src/admin-api/tokens.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { ADMIN_TOKEN, adminRequest, SECOND_ADMIN_TOKEN, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const PEPPER = 'admin-api-test-pepper-0001';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: AdminGateway;
const clock = fixedClock(TEST_NOW);

beforeAll(async () => {
  redis = await startRedis();
  backend = await startPetStore();
  gateway = await startAdminGateway({
    redisUrl: redis.url,
    upstreamUrl: backend.baseUrl,
    pepper: PEPPER,
    clock,
    overrides: { adminApi: { maxFailedAuthPerMinute: 3 } },
  });
});
// Each test starts in a minute of its own: failed attempts of one do not count against the next.
beforeEach(() => clock.set(clock.now() + 60_000));
afterAll(async () => {
  await gateway.close();
  await backend.close();
  await redis.stop();
});

const admin = (path: string, options?: Parameters<typeof adminRequest>[2]) => adminRequest(gateway.adminPort, path, options);

async function publicStatus(key: string, path = '/v1/pets'): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${gateway.port}${path}`, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

async function createKey(body: Record<string, unknown> = { consumer: 'acme' }) {
  const created = await admin('/admin/keys', { method: 'POST', body });
  expect(created.status).toBe(201);
  return created.body as { id: string; key: string; consumer: string; environments: string[]; createdAt: string; revoked: boolean };
}

async function adminActions(action: string, result: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text();
  return parseExposition(text).get(seriesKey('petstore_gateway_admin_actions_total', { action, result, environment: 'production' }));
}

describe('authentication', () => {
  it('answers a request without a token 401 with the challenge and an Error body', async () => {
    const answer = await admin('/admin/keys', { token: null });
    expect(answer.status).toBe(401);
    expect(answer.headers['www-authenticate']).toBe('Bearer realm="petstore-gateway-admin"');
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers['x-request-id']).toMatch(UUID);
    expect(answer.body).toEqual({ code: 'unauthorized', message: 'An admin token is required: Authorization: Bearer <token>', status: 401 });
  });

  it('answers a wrong token 401', async () => {
    const answer = await admin('/admin/keys', { token: 'x'.repeat(40) });
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({ code: 'unauthorized', message: 'The admin token is not valid', status: 401 });
  });

  it('answers 401 before 404 and 405: an unauthenticated caller learns nothing of the paths', async () => {
    expect((await admin('/admin/nothing', { token: null })).status).toBe(401);
    expect((await admin('/admin/keys', { method: 'PATCH', token: null })).status).toBe(401);
  });

  it('accepts every token of the file, as during a rotation', async () => {
    expect((await admin('/admin/keys', { token: ADMIN_TOKEN })).status).toBe(200);
    expect((await admin('/admin/keys', { token: SECOND_ADMIN_TOKEN })).status).toBe(200);
  });

  it('refuses an address 429 with Retry-After after its failures of the minute, whatever it sends, and no other address', async () => {
    for (let attempt = 0; attempt < 3; attempt++) expect((await admin('/admin/keys', { token: 'wrong'.repeat(8), from: '127.0.0.2' })).status).toBe(401);
    clock.set(clock.now() + 20_000);
    const limited = await admin('/admin/keys', { from: '127.0.0.2' });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('40');
    expect(limited.body).toEqual({ code: 'rate_limited', message: 'Too many failed authentications from this address; retry later', status: 429 });
    expect((await admin('/admin/keys', { from: '127.0.0.3' })).status).toBe(200);
    clock.set(clock.now() + 40_000);
    expect((await admin('/admin/keys', { from: '127.0.0.2' })).status).toBe(200);
  });

  it('takes up a rewritten token file on reload, and keeps the tokens in force when the new file is refused', async () => {
    try {
      writeFileSync(gateway.tokenFile, `${SECOND_ADMIN_TOKEN}\n`);
      expect(await gateway.reload()).toMatchObject({ result: 'success' });
      expect((await admin('/admin/keys', { token: ADMIN_TOKEN })).status).toBe(401);
      expect((await admin('/admin/keys', { token: SECOND_ADMIN_TOKEN })).status).toBe(200);

      writeFileSync(gateway.tokenFile, 'too-short\n');
      expect(await gateway.reload()).toEqual({
        result: 'failure',
        reason: 'ADMIN_API_TOKEN_FILE (adminApi.tokenFile): the token on line 1 is shorter than 32 characters',
      });
      expect((await admin('/admin/keys', { token: SECOND_ADMIN_TOKEN })).status).toBe(200);
    } finally {
      writeFileSync(gateway.tokenFile, `${ADMIN_TOKEN}\n${SECOND_ADMIN_TOKEN}\n`);
      await gateway.reload();
    }
  });
});

describe('routing', () => {
  it('answers an unknown path under /admin/ 404 with an Error body', async () => {
    const answer = await admin('/admin/nothing');
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ code: 'not_found', message: 'No admin operation is served at GET /admin/nothing', status: 404 });
  });

  it('answers another method 405 with Allow', async () => {
    const answer = await admin('/admin/keys', { method: 'PATCH' });
    expect(answer.status).toBe(405);
    expect(answer.headers.allow).toBe('GET, HEAD, POST');
    expect(answer.body).toEqual({ code: 'method_not_allowed', message: 'PATCH is not allowed here; allowed: GET, HEAD, POST', status: 405 });
  });

  it('keeps the admin listener’s other endpoints', async () => {
    expect((await fetch(`http://127.0.0.1:${gateway.adminPort}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).status).toBe(200);
    expect((await admin('/deprecations')).status).toBe(200);
  });

  it('is not served on the public listener', async () => {
    const res = await fetch(`http://127.0.0.1:${gateway.port}/admin/keys`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: string }).code).toBe('not_found');
  });

  it('echoes a well-formed X-Request-Id', async () => {
    const answer = await admin('/admin/keys', { headers: { 'x-request-id': 'ci-run-42-step-7' } });
    expect(answer.headers['x-request-id']).toBe('ci-run-42-step-7');
    expect(answer.headers['cache-control']).toBe('no-store');
  });
});

describe('keys', () => {
  it('creates a key valid in the gateway’s environment by default, and shows its secret once', async () => {
    const created = await createKey({ consumer: 'acme' });
    expect(created).toEqual({
      id: expect.stringMatching(/^key_[A-Za-z0-9_-]{12}$/),
      key: expect.stringMatching(/^psk_live_[A-Za-z0-9_-]{43}$/),
      consumer: 'acme',
      name: 'acme',
      environments: ['production'],
      createdAt: new Date(clock.now()).toISOString(),
      revoked: false,
    });
    expect(await publicStatus(created.key)).toBe(200);
    const shown = await admin(`/admin/keys/${created.id}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toEqual({ id: created.id, consumer: 'acme', name: 'acme', environments: ['production'], createdAt: created.createdAt, revoked: false });
  });

  it('creates a key with every field', async () => {
    const created = await createKey({
      consumer: 'portal',
      environments: ['production', 'staging'],
      expiresAt: '2099-01-01T00:00:00Z',
      rateLimitPerMinute: 120,
      optIn: ['beta'],
    });
    expect(created).toMatchObject({ environments: ['production', 'staging'], expiresAt: '2099-01-01T00:00:00.000Z', rateLimitPerMinute: 120, optIn: ['beta'] });
  });

  it.each([
    ['an unknown field', { consumer: 'x', owner: 'y' }, 'Request body must NOT have additional properties'],
    ['no consumer', { environments: ['production'] }, "Request body field 'consumer' is required"],
    ['an unknown environment', { consumer: 'x', environments: ['prod'] }, "Request body field 'environments.0' must be one of: production, staging"],
    ['an expiry in the past', { consumer: 'x', expiresAt: '2020-01-01T00:00:00Z' }, 'expiresAt must be a date-time in the future'],
  ])('refuses %s 400', async (_, body, message) => {
    const answer = await admin('/admin/keys', { method: 'POST', body });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: 'invalid_request', message, status: 400 });
  });

  it('refuses a body that is not JSON 415', async () => {
    const answer = await admin('/admin/keys', { method: 'POST', body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(answer.status).toBe(415);
    expect(answer.body).toEqual({ code: 'unsupported_media_type', message: 'Request body must be sent as application/json', status: 415 });
  });

  it('lists keys without their secrets', async () => {
    const created = await createKey({ consumer: 'listed' });
    const listed = await admin('/admin/keys');
    expect(listed.status).toBe(200);
    const rows = listed.body as Array<Record<string, unknown>>;
    expect(rows.find((row) => row.id === created.id)).toEqual({
      id: created.id,
      consumer: 'listed',
      name: 'listed',
      environments: ['production'],
      createdAt: created.createdAt,
      revoked: false,
    });
    expect(JSON.stringify(rows)).not.toMatch(/psk_/);
  });

  it('answers an unknown id 404', async () => {
    const answer = await admin('/admin/keys/key_doesnotexist');
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ code: 'not_found', message: 'no key with id key_doesnotexist', status: 404 });
  });

  it('revokes a key 204, and the gateway refuses it', async () => {
    const created = await createKey();
    expect(await publicStatus(created.key)).toBe(200);
    const revoked = await admin(`/admin/keys/${created.id}`, { method: 'DELETE' });
    expect(revoked).toMatchObject({ status: 204, body: undefined });
    await waitFor(async () => (await publicStatus(created.key)) === 401, 1000, 10);
    expect(((await admin(`/admin/keys/${created.id}`)).body as { revoked: boolean }).revoked).toBe(true);
  });

  it('rotates a key with an overlap: both work until the old one expires', async () => {
    const created = await createKey({ consumer: 'rotating', rateLimitPerMinute: 30 });
    const rotated = await admin(`/admin/keys/${created.id}/rotate`, { method: 'POST', body: { overlapSeconds: 3600 } });
    expect(rotated.status).toBe(201);
    const body = rotated.body as { id: string; key: string; consumer: string; rateLimitPerMinute: number; previous: { id: string; expiresAt: string } };
    expect(body).toMatchObject({
      consumer: 'rotating',
      rateLimitPerMinute: 30,
      previous: { id: created.id, expiresAt: new Date(clock.now() + 3_600_000).toISOString() },
    });
    expect(body.id).not.toBe(created.id);
    expect(await publicStatus(body.key)).toBe(200);
    expect(await publicStatus(created.key)).toBe(200);
  });

  it('rotates without a body, revoking the old key at once', async () => {
    const created = await createKey();
    const rotated = await admin(`/admin/keys/${created.id}/rotate`, { method: 'POST' });
    expect(rotated.status).toBe(201);
    expect((rotated.body as { previous: { revoked: boolean } }).previous.revoked).toBe(true);
  });

  it('refuses to rotate a revoked key 409', async () => {
    const created = await createKey();
    await admin(`/admin/keys/${created.id}`, { method: 'DELETE' });
    const answer = await admin(`/admin/keys/${created.id}/rotate`, { method: 'POST', body: {} });
    expect(answer.status).toBe(409);
    expect(answer.body).toEqual({ code: 'conflict', message: `key ${created.id} is revoked; create a new one instead`, status: 409 });
  });

  it('sets a key’s rate limit', async () => {
    const created = await createKey();
    const answer = await admin(`/admin/keys/${created.id}/rate-limit`, { method: 'PUT', body: { perMinute: 42 } });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: created.id, rateLimitPerMinute: 42 });
  });

  it('refuses a rate limit of 0 400', async () => {
    const created = await createKey();
    const answer = await admin(`/admin/keys/${created.id}/rate-limit`, { method: 'PUT', body: { perMinute: 0 } });
    expect(answer.body).toEqual({ code: 'invalid_request', message: "Request body field 'perMinute' must be >= 1", status: 400 });
  });

  it('sets and clears a key’s opt-ins', async () => {
    const created = await createKey();
    const set = await admin(`/admin/keys/${created.id}/opt-in`, { method: 'PUT', body: { stabilities: ['experimental', 'beta'] } });
    expect(set.body).toMatchObject({ optIn: ['experimental', 'beta'] });
    const cleared = await admin(`/admin/keys/${created.id}/opt-in`, { method: 'PUT', body: { stabilities: [] } });
    expect(cleared.status).toBe(200);
    expect(cleared.body).not.toHaveProperty('optIn');
  });
});

describe('brownouts and the report', () => {
  it('starts a brownout 201, the gateway refuses the operation, and stops it 204', async () => {
    const created = await createKey();
    const started = await admin('/admin/brownouts/getPet', { method: 'POST', body: { minutes: 10 } });
    expect(started.status).toBe(201);
    const start = new Date(clock.now()).toISOString();
    const end = new Date(clock.now() + 600_000).toISOString();
    expect(started.body).toEqual({ operation: 'getPet', state: 'active', source: 'operator', start, end });
    expect((await admin('/admin/brownouts')).body).toEqual([{ operation: 'getPet', state: 'active', source: 'operator', start, end }]);
    await waitFor(async () => (await publicStatus(created.key, '/v1/pets/1')) === 410, 1000, 10);

    expect((await admin('/admin/brownouts/getPet', { method: 'DELETE' })).status).toBe(204);
    await waitFor(async () => (await publicStatus(created.key, '/v1/pets/1')) === 200, 1000, 10);
    expect((await admin('/admin/brownouts')).body).toEqual([]);
  });

  it('refuses to stop a brownout that is not in progress 409', async () => {
    const answer = await admin('/admin/brownouts/getPet', { method: 'DELETE' });
    expect(answer.body).toEqual({ code: 'conflict', message: 'no brownout of getPet is in progress', status: 409 });
  });

  it('refuses to brown out an operation that is not deprecated 404', async () => {
    const answer = await admin('/admin/brownouts/listPets', { method: 'POST', body: { minutes: 1 } });
    expect(answer.body).toEqual({
      code: 'not_found',
      message: "'listPets' is not a deprecated operation of the interface document; only deprecated operations can be browned out (deprecated: getPet)",
      status: 404,
    });
  });

  it('gives the deprecation report’s rows, as /deprecations does', async () => {
    const answer = await admin('/admin/deprecations/report');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual((await admin('/deprecations')).body);
  });
});

describe('the audit trail', () => {
  it('logs each change at info with the key id, the token’s fingerprint and the request id, never the token', async () => {
    const created = await admin('/admin/keys', {
      method: 'POST',
      body: { consumer: 'audited' },
      token: SECOND_ADMIN_TOKEN,
      headers: { 'x-request-id': 'audit-test-0001' },
    });
    const { id } = created.body as { id: string };
    const line = gateway.logs.find((entry) => entry.reqId === 'audit-test-0001');
    expect(line).toMatchObject({
      level: 30,
      action: 'create_key',
      keyId: id,
      tokenFingerprint: tokenFingerprint(SECOND_ADMIN_TOKEN),
      result: 'success',
      status: 201,
    });
    expect(JSON.stringify(gateway.logs)).not.toContain(ADMIN_TOKEN);
    expect(JSON.stringify(gateway.logs)).not.toContain(SECOND_ADMIN_TOKEN);
  });

  it('logs a refused change with its result', async () => {
    await admin('/admin/keys/key_doesnotexist', { method: 'DELETE', headers: { 'x-request-id': 'audit-test-0002' } });
    expect(gateway.logs.find((entry) => entry.reqId === 'audit-test-0002')).toMatchObject({
      action: 'revoke_key',
      keyId: 'key_doesnotexist',
      result: 'refused',
      status: 404,
      code: 'not_found',
    });
  });

  it('counts changes by action and result', async () => {
    const before = (await adminActions('set_rate_limit', 'success')) ?? 0;
    const created = await createKey();
    await admin(`/admin/keys/${created.id}/rate-limit`, { method: 'PUT', body: { perMinute: 5 } });
    expect(await adminActions('set_rate_limit', 'success')).toBe(before + 1);
  });

  it('counts failed authentications', async () => {
    const before = (await adminActions('authenticate', 'refused')) ?? 0;
    await admin('/admin/keys', { token: null, from: '127.0.0.4' });
    expect(await adminActions('authenticate', 'refused')).toBe(before + 1);
  });
});

describe('without ADMIN_API_TOKEN_FILE', () => {
  let plain: RedisGateway;
  beforeAll(async () => {
    const config = loadConfig(
      { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production' },
      { shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 } },
    );
    plain = await startRedisGateway(config, { pepper: PEPPER, clock });
  });
  afterAll(() => plain.close());

  it('answers /admin/ 404 with an Error body, whatever the token', async () => {
    const answer = await adminRequest(plain.adminPort, '/admin/keys');
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({
      code: 'not_found',
      message: 'Admin endpoints: /healthz, /readyz, /metrics, /deprecations, /.well-known/jwks.json (when signing), /admin/ (when ADMIN_API_TOKEN_FILE is set)',
      status: 404,
    });
  });
});

const WRONG_TOKEN = 'wrong'.repeat(8);

/** `count` failed authentications, each from its own loopback address (127.1.x.y), a few connections at a time. */
async function failFromManyAddresses(count: number, offset = 0): Promise<void> {
  const concurrency = 32;
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const index = offset + next++;
        const answer = await admin('/admin/keys', { token: WRONG_TOKEN, from: `127.1.${index >> 8}.${index & 255}` });
        expect(answer.status).toBe(401);
      }
    }),
  );
}

describe('GET /deprecations while the admin API is on', () => {
  it('is refused 401 with an Error body and the challenge without the admin token', async () => {
    const answer = await admin('/deprecations', { token: null, headers: { 'x-request-id': 'deprecations-no-token' } });
    expect(answer.status).toBe(401);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers['www-authenticate']).toBe('Bearer realm="petstore-gateway-admin"');
    expect(answer.headers['x-request-id']).toBe('deprecations-no-token');
    expect(answer.body).toEqual({ code: 'unauthorized', message: 'An admin token is required: Authorization: Bearer <token>', status: 401 });
  });

  it('counts its failures against the address as the admin API does', async () => {
    for (let attempt = 0; attempt < 3; attempt++) expect((await admin('/deprecations', { token: WRONG_TOKEN, from: '127.0.0.4' })).status).toBe(401);
    expect((await admin('/admin/keys', { from: '127.0.0.4' })).status).toBe(429);
  });

  it('answers the report with the admin token, saying how many rows it has', async () => {
    const answer = await admin('/deprecations');
    expect(answer.status).toBe(200);
    expect(answer.headers['x-total-count']).toBe('0');
    expect(answer.body).toEqual([]);
  });
});

describe('failed authentications', () => {
  it('keep an address blocked while more addresses than the table counts fail', { timeout: 120_000 }, async () => {
    for (let attempt = 0; attempt < 3; attempt++) expect((await admin('/admin/keys', { token: WRONG_TOKEN, from: '127.0.0.5' })).status).toBe(401);
    await failFromManyAddresses(10_050);
    const refused = await admin('/admin/keys', { from: '127.0.0.5' });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ code: 'rate_limited', message: 'Too many failed authentications from this address; retry later', status: 429 });
  });

  it('are logged one by one five times in ten seconds, then told as a count', async () => {
    // The interval's first failure: what an earlier test left to tell is told before it.
    await failFromManyAddresses(1, 20_000);
    const linesBefore = gateway.logs.length;
    await failFromManyAddresses(39, 20_001);
    clock.set(clock.now() + 10_000);
    await failFromManyAddresses(1, 20_040);
    const lines = gateway.logs.slice(linesBefore).filter((line) => line.action === 'authenticate');
    expect(lines.map((line) => line.msg)).toEqual([
      ...Array.from({ length: 4 }, () => 'admin API: authentication failed'),
      'admin API: 35 more failed authentications in 10 s, not logged one by one',
      'admin API: authentication failed',
    ]);
    expect(lines[4]).toMatchObject({ level: 40, suppressed: 35, intervalMs: 10_000 });
  });
});
