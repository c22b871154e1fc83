// PUT /admin/keys/{id}/quota and the quotas of createKey, over HTTP on a real Redis: the answers, the refusals, the audit line and count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenFingerprint } from '../../src/admin-api/tokens.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { ADMIN_TOKEN, adminRequest, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';
import { redisClock } from '../helpers/redis-clock.ts';

const PEPPER = 'admin-key-quota-pepper-0001';
const clock = fixedClock(TEST_NOW);
const CREATED_AT = new Date(TEST_NOW).toISOString();
/** Redis's clock at the gateway's: the exact store's quota periods are Redis's (its TIME). */
const redisAt = redisClock(TEST_NOW);
let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: AdminGateway;

beforeAll(async () => {
  [redis, backend] = await Promise.all([startRedis({ env: redisAt.env }), startPetStore()]);
  gateway = await startAdminGateway({ redisUrl: redis.url, upstreamUrl: backend.baseUrl, pepper: PEPPER, clock });
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([backend?.close(), redis?.stop()]);
  redisAt.remove();
});

const admin = (path: string, options?: Parameters<typeof adminRequest>[2]) => adminRequest(gateway.adminPort, path, options);
const setQuota = (id: string, body: unknown, headers?: Record<string, string>) =>
  admin(`/admin/keys/${id}/quota`, { method: 'PUT', body, ...(headers ? { headers } : {}) });

async function createKey(body: Record<string, unknown>): Promise<string> {
  const created = await admin('/admin/keys', { method: 'POST', body });
  expect(created.status).toBe(201);
  return (created.body as { id: string }).id;
}

/** The Key representation of a key `createKey` made for `consumer`, with `fields` laid over it. */
const keyOf = (id: string, consumer: string, fields: Record<string, unknown> = {}) => ({
  id,
  consumer,
  name: consumer,
  environments: ['production'],
  createdAt: CREATED_AT,
  revoked: false,
  ...fields,
});

async function adminActions(action: string, result: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text();
  return parseExposition(text).get(seriesKey('petstore_gateway_admin_actions_total', { action, result, environment: 'production' }));
}

describe('createKey with quotas', () => {
  it('answers them in the key, and GET shows them', async () => {
    const created = await admin('/admin/keys', { method: 'POST', body: { consumer: 'quoted', quotaPerDay: 1000, quotaPerMonth: 25_000 } });
    const { id, key } = created.body as { id: string; key: string };
    expect(created.body).toEqual({ ...keyOf(id, 'quoted', { quotaPerDay: 1000, quotaPerMonth: 25_000 }), key });
    expect((await admin(`/admin/keys/${id}`)).body).toEqual(keyOf(id, 'quoted', { quotaPerDay: 1000, quotaPerMonth: 25_000 }));
  });

  it('answers no quota field for a key without one', async () => {
    const id = await createKey({ consumer: 'unquoted' });
    expect((await admin(`/admin/keys/${id}`)).body).toEqual(keyOf(id, 'unquoted'));
  });

  it.each([
    ['a daily quota of 0', { consumer: 'x', quotaPerDay: 0 }, "Request body field 'quotaPerDay' must be >= 1"],
    ['a monthly quota that is not an integer', { consumer: 'x', quotaPerMonth: 1.5 }, "Request body field 'quotaPerMonth' must be integer"],
    ['a quota past the int64 range', { consumer: 'x', quotaPerDay: 1e20 }, "Request body field 'quotaPerDay' must be <= 9007199254740991"],
  ])('refuses %s 400', async (_, body, message) => {
    const answer = await admin('/admin/keys', { method: 'POST', body });
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.body).toEqual({ code: 'invalid_request', message, status: 400 });
  });
});

describe('PUT /admin/keys/{id}/quota', () => {
  it('sets both quotas: 200 with the key', async () => {
    const id = await createKey({ consumer: 'set-both' });
    const answer = await setQuota(id, { perDay: 100, perMonth: 2000 });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.body).toEqual(keyOf(id, 'set-both', { quotaPerDay: 100, quotaPerMonth: 2000 }));
  });

  it('changes one and leaves the other as it is', async () => {
    const id = await createKey({ consumer: 'change-one', quotaPerDay: 100, quotaPerMonth: 2000 });
    expect((await setQuota(id, { perMonth: 3000 })).body).toEqual(keyOf(id, 'change-one', { quotaPerDay: 100, quotaPerMonth: 3000 }));
  });

  it('removes one with null', async () => {
    const id = await createKey({ consumer: 'remove-one', quotaPerDay: 100, quotaPerMonth: 2000 });
    expect((await setQuota(id, { perDay: null })).body).toEqual(keyOf(id, 'remove-one', { quotaPerMonth: 2000 }));
    expect((await admin(`/admin/keys/${id}`)).body).toEqual(keyOf(id, 'remove-one', { quotaPerMonth: 2000 }));
  });

  it('removes both', async () => {
    const id = await createKey({ consumer: 'remove-both', quotaPerDay: 100, quotaPerMonth: 2000 });
    expect((await setQuota(id, { perDay: null, perMonth: null })).body).toEqual(keyOf(id, 'remove-both'));
  });

  it('answers an unknown id 404', async () => {
    const answer = await setQuota('key_unknown00000', { perDay: 1 });
    expect(answer.status).toBe(404);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.body).toEqual({ code: 'not_found', message: 'no key with id key_unknown00000', status: 404 });
  });

  it.each([
    ['an empty body', {}, 'Request body must NOT have fewer than 1 properties'],
    ['a quota of 0', { perDay: 0 }, "Request body field 'perDay' must be >= 1"],
    ['a quota that is a string', { perMonth: '10' }, "Request body field 'perMonth' must be integer"],
    ['a fraction', { perDay: 2.5 }, "Request body field 'perDay' must be integer"],
    ['an unknown field', { perWeek: 10 }, 'Request body must NOT have additional properties'],
  ])('refuses %s 400, changing nothing', async (_, body, message) => {
    const id = await createKey({ consumer: 'refused', quotaPerDay: 100 });
    const answer = await setQuota(id, body);
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.body).toEqual({ code: 'invalid_request', message, status: 400 });
    expect((await admin(`/admin/keys/${id}`)).body).toEqual(keyOf(id, 'refused', { quotaPerDay: 100 }));
  });

  it('refuses no body 400', async () => {
    const id = await createKey({ consumer: 'no-body' });
    const answer = await admin(`/admin/keys/${id}/quota`, { method: 'PUT' });
    expect(answer.body).toEqual({ code: 'invalid_request', message: 'Request body is required', status: 400 });
  });

  it('answers another method 405 with Allow', async () => {
    const id = await createKey({ consumer: 'other-method' });
    const answer = await admin(`/admin/keys/${id}/quota`, { method: 'POST', body: { perDay: 1 } });
    expect(answer.status).toBe(405);
    expect(answer.headers.allow).toBe('PUT');
  });
});

describe('the request path', () => {
  async function call(key: string): Promise<{ status: number; retryAfter: string | null; body: unknown }> {
    const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
  }

  /** A key created with a daily quota of 2 and called until it is refused. */
  async function keyPastItsQuota(consumer: string): Promise<{ id: string; key: string }> {
    const created = await admin('/admin/keys', { method: 'POST', body: { consumer, quotaPerDay: 2 } });
    const { id, key } = created.body as { id: string; key: string };
    expect((await call(key)).status).toBe(200);
    expect((await call(key)).status).toBe(200);
    expect((await call(key)).status).toBe(429);
    return { id, key };
  }

  it('refuses a key past the quota it was created with 429 quota_exceeded until midnight UTC', async () => {
    const created = await admin('/admin/keys', { method: 'POST', body: { consumer: 'metered', quotaPerDay: 1 } });
    const { key } = created.body as { key: string };
    expect((await call(key)).status).toBe(200);
    const midnight = new Date(TEST_NOW);
    midnight.setUTCHours(24, 0, 0, 0);
    expect(await call(key)).toEqual({
      status: 429,
      retryAfter: String((midnight.getTime() - TEST_NOW) / 1000),
      body: { code: 'quota_exceeded', message: "The day's quota of 1 requests for this API key is used up; retry after the time in Retry-After", status: 429 },
    });
  });

  it('admits the key again within a second of its quota being raised', async () => {
    const { id, key } = await keyPastItsQuota('raised');
    expect((await setQuota(id, { perDay: 10 })).status).toBe(200);
    await waitFor(async () => (await call(key)).status === 200, 1000, 10);
  });

  it('refuses the key within a second of its quota being lowered below its calls', async () => {
    const created = await admin('/admin/keys', { method: 'POST', body: { consumer: 'lowered', quotaPerDay: 100 } });
    const { id, key } = created.body as { id: string; key: string };
    for (let calls = 0; calls < 3; calls++) expect((await call(key)).status).toBe(200);
    expect((await setQuota(id, { perDay: 3 })).status).toBe(200);
    await waitFor(async () => (await call(key)).status === 429, 1000, 10);
  });

  it('admits the key again within a second of its quotas being removed', async () => {
    const { id, key } = await keyPastItsQuota('unmetered');
    expect((await setQuota(id, { perDay: null })).status).toBe(200);
    await waitFor(async () => (await call(key)).status === 200, 1000, 10);
  });
});

describe('the audit trail of set_quota', () => {
  it('logs the change at info with the key id, the token’s fingerprint and the request id', async () => {
    const id = await createKey({ consumer: 'audited-quota' });
    await setQuota(id, { perDay: 5 }, { 'x-request-id': 'quota-audit-0001' });
    expect(gateway.logs.find((entry) => entry.reqId === 'quota-audit-0001')).toMatchObject({
      level: 30,
      action: 'set_quota',
      keyId: id,
      tokenFingerprint: tokenFingerprint(ADMIN_TOKEN),
      result: 'success',
      status: 200,
      msg: 'admin action set_quota: success',
    });
  });

  it('logs a refusal with its code', async () => {
    await setQuota('key_unknown00000', { perMonth: null }, { 'x-request-id': 'quota-audit-0002' });
    expect(gateway.logs.find((entry) => entry.reqId === 'quota-audit-0002')).toMatchObject({
      action: 'set_quota',
      keyId: 'key_unknown00000',
      result: 'refused',
      status: 404,
      code: 'not_found',
    });
  });

  it('counts changes by result, every series there from the start', async () => {
    expect(await adminActions('set_quota', 'failed')).toBe(0);
    const before = (await adminActions('set_quota', 'success')) ?? 0;
    const id = await createKey({ consumer: 'counted-quota' });
    await setQuota(id, { perDay: 5 });
    expect(await adminActions('set_quota', 'success')).toBe(before + 1);
  });
});
