// Over the admin API on a real Redis: a key is rotated once however many ask at once, even unannounced; consumer names are printable, `name` is `consumer`'s alias.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSUMER_NAME_PATTERN } from '../../src/auth/consumer-name.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { adminRequest, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const PEPPER = 'admin-key-changes-pepper-01';
const clock = fixedClock(TEST_NOW);
let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: AdminGateway;

beforeAll(async () => {
  [redis, backend] = await Promise.all([startRedis(), startPetStore()]);
  gateway = await startAdminGateway({ redisUrl: redis.url, upstreamUrl: backend.baseUrl, pepper: PEPPER, clock });
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([backend?.close(), redis?.stop()]);
});

const admin = (path: string, options?: Parameters<typeof adminRequest>[2]) => adminRequest(gateway.adminPort, path, options);

async function createKey(consumer: string): Promise<{ id: string; key: string }> {
  const created = await admin('/admin/keys', { method: 'POST', body: { consumer } });
  expect(created.status).toBe(201);
  return created.body as { id: string; key: string };
}

async function publicStatus(key: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

/** Every key of `consumer` in the listing (one page holds them all here). */
async function keysOf(consumer: string): Promise<Array<{ id: string; revoked: boolean; rotatedTo?: string }>> {
  const listed = await admin('/admin/keys?limit=1000');
  return (listed.body as Array<{ id: string; consumer: string; revoked: boolean; rotatedTo?: string }>).filter((key) => key.consumer === consumer);
}

describe('rotation', () => {
  it.each([
    ['revoking the old key', {}],
    ['with an overlap', { overlapSeconds: 3600 }],
  ])('of eight at once (%s), one gets 201 and seven 409 naming its successor', async (_, body) => {
    const consumer = `rotated-${'overlapSeconds' in body ? 'overlap' : 'revoke'}`;
    const { id } = await createKey(consumer);
    const answers = await Promise.all(Array.from({ length: 8 }, () => admin(`/admin/keys/${id}/rotate`, { method: 'POST', body })));
    const won = answers.filter((answer) => answer.status === 201);
    expect(won).toHaveLength(1);
    const successor = (won[0]!.body as { id: string }).id;
    const refused = answers.filter((answer) => answer.status !== 201);
    for (const answer of refused) {
      expect(answer.status).toBe(409);
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(answer.body).toEqual({ code: 'conflict', message: `key ${id} was already rotated to ${successor}; rotate that key instead`, status: 409 });
    }
    expect((await keysOf(consumer)).map((key) => key.id).sort()).toEqual([id, successor].sort());
  });

  it('refuses a second rotation while the old key still works in its overlap', async () => {
    const created = await createKey('overlapping');
    const first = await admin(`/admin/keys/${created.id}/rotate`, { method: 'POST', body: { overlapSeconds: 3600 } });
    const successor = (first.body as { id: string }).id;
    expect(await publicStatus(created.key)).toBe(200);
    const again = await admin(`/admin/keys/${created.id}/rotate`, { method: 'POST', body: { overlapSeconds: 3600 } });
    expect(again.body).toEqual({ code: 'conflict', message: `key ${created.id} was already rotated to ${successor}; rotate that key instead`, status: 409 });
    expect((await admin(`/admin/keys/${created.id}`)).body).toMatchObject({ id: created.id, revoked: false, rotatedTo: successor });
  });

  it('rotates the successor of a rotation', async () => {
    const { id } = await createKey('twice');
    const first = await admin(`/admin/keys/${id}/rotate`, { method: 'POST' });
    const second = await admin(`/admin/keys/${(first.body as { id: string }).id}/rotate`, { method: 'POST' });
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({ consumer: 'twice', previous: { id: (first.body as { id: string }).id, revoked: true } });
  });
});

describe('a rotation whose announcement fails (PUBLISH refused, as on a connection that drops)', () => {
  let denied: AdminGateway;
  beforeAll(async () => {
    // The same Redis for a user that may do anything but PUBLISH: the rotation's script commits, its announcement fails.
    await redis.client.call('ACL', 'SETUSER', 'no-publish', 'on', '>no-publish-password', '~*', '&*', '+@all', '-publish');
    const redisUrl = `redis://no-publish:no-publish-password@127.0.0.1:${redis.port}`;
    denied = await startAdminGateway({ redisUrl, upstreamUrl: backend.baseUrl, pepper: PEPPER, clock });
  });
  afterAll(async () => {
    await denied?.close();
  });

  it('answers 201 with the new secret, which authenticates, and the old key as the script left it', async () => {
    const { id } = await createKey('unannounced');
    const rotated = await adminRequest(denied.adminPort, `/admin/keys/${id}/rotate`, { method: 'POST' });
    expect(rotated.status).toBe(201);
    const { id: successor, key } = rotated.body as { id: string; key: string };
    expect(rotated.body).toEqual({
      id: successor,
      consumer: 'unannounced',
      name: 'unannounced',
      environments: ['production'],
      createdAt: new Date(TEST_NOW).toISOString(),
      revoked: false,
      key,
      previous: {
        id,
        consumer: 'unannounced',
        name: 'unannounced',
        environments: ['production'],
        createdAt: new Date(TEST_NOW).toISOString(),
        revoked: true,
        rotatedTo: successor,
      },
    });
    expect(await publicStatus(key)).toBe(200);
  });

  it('logs that the change was not announced, naming the key', async () => {
    const { id } = await createKey('unannounced-logged');
    await adminRequest(denied.adminPort, `/admin/keys/${id}/rotate`, { method: 'POST' });
    const line = denied.logs.find((entry) => entry.keyId === id);
    expect(line).toMatchObject({
      level: 40,
      keyId: id,
      msg: 'admin API: a key change was made but not announced; replicas see it by their epoch check within a second',
    });
    expect((line!.err as { message: string }).message).toMatch(/^NOPERM .*'publish'/);
  });
});

describe('consumer names', () => {
  const patternMessage = `Request body field 'consumer' must match pattern "${CONSUMER_NAME_PATTERN}"`;

  it.each([
    ['an escape sequence', 'acme\u001b[2J'],
    ['a newline that would forge a line', 'acme\nrevoked: true'],
    ['a NUL', 'acme\u0000'],
    ['a right-to-left override', 'acme\u202e'],
    ['a leading space', ' acme'],
    ['a trailing space', 'acme '],
    ['a line separator', 'ac\u2028me'],
  ])('refuses %s 400', async (_, consumer) => {
    const answer = await admin('/admin/keys', { method: 'POST', body: { consumer } });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: 'invalid_request', message: patternMessage, status: 400 });
  });

  it('refuses 129 characters 400', async () => {
    const answer = await admin('/admin/keys', { method: 'POST', body: { consumer: 'é'.repeat(129) } });
    expect(answer.body).toEqual({ code: 'invalid_request', message: "Request body field 'consumer' must NOT have more than 128 characters", status: 400 });
  });

  it.each([
    ['128 characters beyond the BMP', '𝔸'.repeat(128)],
    ['letters, marks, numbers, punctuation, symbols and inner spaces', 'Café Müller & Söhne (北京) — №7 €'],
  ])('accepts %s', async (_, consumer) => {
    const answer = await admin('/admin/keys', { method: 'POST', body: { consumer } });
    expect(answer.status).toBe(201);
    expect((answer.body as { consumer: string }).consumer).toBe(consumer);
  });
});

describe('`name`, the deprecated spelling of `consumer`', () => {
  it('is accepted alone', async () => {
    const answer = await admin('/admin/keys', { method: 'POST', body: { name: 'legacy-client' } });
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({ consumer: 'legacy-client' });
  });

  it('is answered with `consumer`, the same, in a rotation’s new and old key', async () => {
    const { id } = await createKey('answered-both');
    const rotated = await admin(`/admin/keys/${id}/rotate`, { method: 'POST' });
    expect(rotated.body).toMatchObject({ consumer: 'answered-both', name: 'answered-both', previous: { consumer: 'answered-both', name: 'answered-both' } });
  });

  it('is accepted with `consumer` when the same', async () => {
    const answer = await admin('/admin/keys', { method: 'POST', body: { name: 'both', consumer: 'both' } });
    expect(answer.status).toBe(201);
  });

  it('is refused 400 with a different `consumer`', async () => {
    const answer = await admin('/admin/keys', { method: 'POST', body: { name: 'one', consumer: 'other' } });
    expect(answer.body).toEqual({
      code: 'invalid_request',
      message: "Request body fields 'consumer' and 'name' differ: send 'consumer' only ('name' is its deprecated spelling)",
      status: 400,
    });
  });

  it('follows the same character set', async () => {
    const answer = await admin('/admin/keys', { method: 'POST', body: { name: 'x\u001b' } });
    expect(answer.body).toEqual({ code: 'invalid_request', message: `Request body field 'name' must match pattern "${CONSUMER_NAME_PATTERN}"`, status: 400 });
  });
});
