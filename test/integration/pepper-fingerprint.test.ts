// A pepper that disagrees with the keys' is refused by the keys CLI and keeps `npm start` not ready, saying which setting; production needs one.
import { execFile } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { pepperFingerprint } from '../../src/auth/pepper-fingerprint.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { PROJECT_ROOT, START_ARGS, startGatewayProcess, waitFor, type GatewayProcess } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const PEPPER = 'fingerprint-pepper-000001';
const OTHER_PEPPER = 'fingerprint-pepper-000002';
const FINGERPRINT_KEY = 'petstore-gateway:{keys}:pepper-fingerprint';
const MISMATCH_LINE =
  '"msg":"not ready: the pepper (API_KEY_PEPPER or API_KEY_PEPPER_FILE) differs from the one the API keys in this Redis were made with: use the gateways\' pepper"';
/** How often the gateway logged the mismatch: once per change of state, not once per check. */
const mismatchLines = (process: GatewayProcess) => process.output().split(MISMATCH_LINE).length - 1;

let backend: SampleBackend;
let redis: PrivateRedis;
let gateway: GatewayProcess | undefined;

beforeAll(async () => {
  backend = await startPetStore();
});
afterAll(async () => {
  await backend.close();
});
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
  await redis?.stop();
});

const withPepper = (pepper: string | undefined) => ({ REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, ...(pepper ? { API_KEY_PEPPER: pepper } : {}) });

async function create(pepper: string | undefined) {
  return runKeysCli(['create', '--consumer', 'acme', '--environment', 'staging', '--json'], withPepper(pepper));
}

async function readyz(process: GatewayProcess): Promise<{ status: number; body: { status: string; checks: Record<string, string> } }> {
  const res = await fetch(`http://127.0.0.1:${process.adminPort}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; checks: Record<string, string> } };
}

async function pepperGauge(process: GatewayProcess): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${process.adminPort}/metrics`)).text();
  const match = /^petstore_gateway_pepper_fingerprint_matches\{[^}]*\} (\d+)$/m.exec(text);
  return match ? Number(match[1]) : undefined;
}

async function listPets(process: GatewayProcess, key: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${process.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

describe('the keys CLI', () => {
  it("records its pepper's fingerprint (never the pepper) with the first key", async () => {
    redis = await startRedis();
    expect((await create(PEPPER)).code).toBe(0);
    const stored = await redis.client.get(FINGERPRINT_KEY);
    expect(stored).toBe(pepperFingerprint(PEPPER));
    expect(stored).not.toContain(PEPPER);
  });

  it('refuses to create a key with another pepper, or none, naming the settings (exit 1)', async () => {
    redis = await startRedis();
    expect((await create(PEPPER)).code).toBe(0);

    const other = await create(OTHER_PEPPER);
    expect(other).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "keys: refusing to write: the pepper (API_KEY_PEPPER or API_KEY_PEPPER_FILE) differs from the one the API keys in this Redis were made with: use the gateways' pepper\n",
    });
    const none = await create(undefined);
    expect(none).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "keys: refusing to write: the API keys in this Redis were made with a pepper, but none is set: set API_KEY_PEPPER_FILE (or API_KEY_PEPPER) to the gateways' pepper\n",
    });
    const listed = await runKeysCli(['list', '--json'], withPepper(PEPPER));
    expect(JSON.parse(listed.stdout)).toHaveLength(1);
  });

  it('refuses peppered keys on a Redis whose keys were made without a pepper', async () => {
    redis = await startRedis();
    expect((await create(undefined)).code).toBe(0);
    expect(await redis.client.get(FINGERPRINT_KEY)).toBe('none');
    const peppered = await create(PEPPER);
    expect(peppered.code).toBe(1);
    expect(peppered.stderr).toBe(
      'keys: refusing to write: the API keys in this Redis were made without a pepper, but one is set (API_KEY_PEPPER or API_KEY_PEPPER_FILE): unset it, or re-issue the keys with it\n',
    );
  });

  it('still revokes with another pepper (revoking never hashes a key), warning on stderr', async () => {
    redis = await startRedis();
    const { id } = JSON.parse((await create(PEPPER)).stdout) as { id: string };
    const revoked = await runKeysCli(['revoke', id, '--json'], withPepper(OTHER_PEPPER));
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ id, revoked: true });
    expect(revoked.stderr).toContain('keys: warning: the pepper (API_KEY_PEPPER or API_KEY_PEPPER_FILE) differs');
  });

  it('records the fingerprint on a Redis holding keys written before fingerprints, and says so', async () => {
    redis = await startRedis();
    expect((await create(PEPPER)).code).toBe(0);
    await redis.client.del(FINGERPRINT_KEY);
    const second = await create(PEPPER);
    expect(second.code).toBe(0);
    expect(second.stderr).toContain('keys: note: this Redis held 1 key(s) but no pepper fingerprint');
    expect(await redis.client.get(FINGERPRINT_KEY)).toBe(pepperFingerprint(PEPPER));
  });
});

describe('npm start', () => {
  it("is not ready with another pepper than the keys', logs one error naming the setting, and is ready once it matches", async () => {
    redis = await startRedis();
    const { key } = JSON.parse((await create(PEPPER)).stdout) as { key: string };
    gateway = await startGatewayProcess(withPepper(OTHER_PEPPER));
    const started = gateway;
    await waitFor(async () => mismatchLines(started) > 0);
    expect(await readyz(started)).toEqual({
      status: 503,
      body: expect.objectContaining({ status: 'not_ready', checks: expect.objectContaining({ pepper: 'failing', redis: 'ok' }) }),
    });
    expect(started.output()).toContain('"setting":"API_KEY_PEPPER_FILE / API_KEY_PEPPER"');
    expect(await listPets(started, key)).toBe(401);

    // The operator decides this gateway's pepper is the right one (say, after re-issuing the keys): the next check records it.
    await redis.client.del(FINGERPRINT_KEY);
    await waitFor(async () => (await readyz(started)).status === 200, 10_000);
    expect(mismatchLines(started)).toBe(1);
    expect(await redis.client.get(FINGERPRINT_KEY)).toBe(pepperFingerprint(OTHER_PEPPER));
  });

  it('checks again when its Redis connection comes back; verified, it stays ready and reports the changed fingerprint', async () => {
    redis = await startRedis();
    await create(PEPPER);
    gateway = await startGatewayProcess(withPepper(PEPPER));
    const started = gateway;
    await waitFor(async () => (await readyz(started)).status === 200);

    // Another writer's fingerprint, then the gateway's connections drop and come back: it asks again.
    await redis.client.set(FINGERPRINT_KEY, pepperFingerprint(OTHER_PEPPER));
    await redis.client.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await waitFor(async () => (await pepperGauge(started)) === 0);
    // Log lines are written in batches, at least every second.
    await waitFor(async () =>
      started.output().includes('"msg":"the keys\' pepper fingerprint in Redis changed after this replica verified it (it stays ready): the pepper'),
    );
    expect((await readyz(started)).status).toBe(200);
  });

  it('is not ready, saying why once, while Redis refuses to record its fingerprint over keys written before fingerprints', async () => {
    redis = await startRedis();
    await create(PEPPER);
    await redis.client.del(FINGERPRINT_KEY);
    // Writes refused (NOREPLICAS), as on a read-only replica or a full Redis.
    await redis.client.config('SET', 'min-replicas-to-write', '1');
    gateway = await startGatewayProcess(withPepper(PEPPER));
    const started = gateway;
    await waitFor(async () => started.output().includes('the pepper fingerprint could not be checked in Redis'));
    expect((await readyz(started)).status).toBe(503);
    await redis.client.config('SET', 'min-replicas-to-write', '0');
    await waitFor(async () => (await readyz(started)).status === 200);
    expect(started.output().split('the pepper fingerprint could not be checked in Redis').length - 1).toBe(1);
    expect(await redis.client.get(FINGERPRINT_KEY)).toBe(pepperFingerprint(PEPPER));
  });

  it('stays ready through a Redis outage: cached keys served, others 503, Redis failing in /readyz', async () => {
    redis = await startRedis();
    const { key: cached } = JSON.parse((await create(PEPPER)).stdout) as { key: string };
    const { key: uncached } = JSON.parse((await create(PEPPER)).stdout) as { key: string };
    gateway = await startGatewayProcess(withPepper(PEPPER));
    const started = gateway;
    await waitFor(async () => (await readyz(started)).status === 200);
    expect(await listPets(started, cached)).toBe(200);

    await redis.kill();
    await waitFor(async () => (await readyz(started)).body.checks.redis === 'failing');
    expect(await readyz(started)).toEqual({
      status: 200,
      body: { status: 'ready', shuttingDown: false, checks: { pepper: 'ok', redis: 'failing', upstream: 'ok' } },
    });
    expect(await listPets(started, cached)).toBe(200);
    expect(await listPets(started, uncached)).toBe(503);
    const metrics = await (await fetch(`http://127.0.0.1:${started.adminPort}/metrics`)).text();
    expect(metrics).toMatch(/^petstore_gateway_dependency_up\{dependency="redis",environment="staging"\} 0$/m);

    // Back empty (no persistence): nothing to disagree with, and a gateway never claims an empty Redis.
    await redis.restart();
    await waitFor(async () => (await readyz(started)).body.checks.redis === 'ok');
    expect((await readyz(started)).body).toMatchObject({ status: 'ready', checks: { pepper: 'ok', redis: 'ok' } });
    expect(await redis.client.get(FINGERPRINT_KEY)).toBeNull();
  });

  it('refuses to start in production without a pepper, naming both settings', async () => {
    redis = await startRedis();
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [...START_ARGS],
        { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', REDIS_URL: redis.url, GATEWAY_ENVIRONMENT: 'production' } },
        (error, _stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stderr }),
      );
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'GATEWAY_ENVIRONMENT is production and no pepper is set: set API_KEY_PEPPER_FILE (auth.pepperFile; a mounted secret) or API_KEY_PEPPER, at least 16 characters',
    );
  });
});
