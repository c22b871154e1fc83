// The admin token on the admin listener, against a real Redis: /deprecations guarded, blocks that churn cannot lift, failure lines throttled.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { adminRequest, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { startRedis, type PrivateRedis } from '../helpers/start-redis.ts';
import { startPetStore } from '../helpers/start-upstream.ts';

const PEPPER = 'admin-auth-test-pepper-0001';
const WRONG_TOKEN = 'wrong'.repeat(8);

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
// Each test starts in a minute of its own: blocks and throttled lines of one do not reach the next.
beforeEach(() => clock.set(clock.now() + 60_000));
afterAll(async () => {
  await gateway.close();
  await backend.close();
  await redis.stop();
});

const admin = (path: string, options?: Parameters<typeof adminRequest>[2]) => adminRequest(gateway.adminPort, path, options);

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
