// Two gateway processes (npm start's entry point) on one Redis: what an operator does, with the CLIs or one replica's admin API, reaches both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminRequest, removeTokenFile, SECOND_ADMIN_TOKEN, tokenFile } from '../helpers/admin-api.ts';
import { runDeprecationsCli, runKeysCli } from '../helpers/run-keys-cli.ts';
import { waitFor, type GatewayProcess } from '../../support/start-gateway-process.ts';
import type { PrivateRedis } from '../../support/start-redis.ts';
import { startReplicas, type Replicas } from '../../support/start-replicas.ts';

let redis: PrivateRedis;
let replicas: GatewayProcess[];
let env: Record<string, string>;
/** The CLIs' environment on an operator's machine: no Redis, no pepper, only the admin token. */
let operator: Record<string, string>;
let adminUrl: string;
let started: Replicas;

beforeAll(async () => {
  started = await startReplicas(2, { API_KEY_PEPPER: 'replicas-test-pepper-0001', ADMIN_API_TOKEN_FILE: tokenFile(ADMIN_TOKEN, SECOND_ADMIN_TOKEN) });
  ({ redis, replicas, env } = started);
  adminUrl = `http://127.0.0.1:${replicas[0]!.adminPort}`;
  // An unreachable Redis: any attempt of the CLI to use it would fail.
  operator = { ADMIN_API_TOKEN: ADMIN_TOKEN, REDIS_URL: 'redis://127.0.0.1:1' };
});
afterAll(async () => {
  await started.stop();
  removeTokenFile(env.ADMIN_API_TOKEN_FILE!);
});

async function status(replica: GatewayProcess, key: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${replica.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

describe('two replicas on one Redis', () => {
  it('both accept a key created with the CLI, and both refuse it within a second of its revocation', async () => {
    const created = await runKeysCli(['create', '--name', 'acme', '--environment', 'production', '--json'], env);
    expect(created.code).toBe(0);
    const { id, key } = JSON.parse(created.stdout) as { id: string; key: string };
    for (const replica of replicas) expect(await status(replica, key)).toBe(200);

    const revokedAt = Date.now();
    const revoked = await runKeysCli(['revoke', id], env);
    expect(revoked.code).toBe(0);
    const cliDoneMs = Date.now() - revokedAt;
    const delays = await Promise.all(replicas.map((replica) => waitFor(async () => (await status(replica, key)) === 401, 1000, 10)));
    for (const delay of delays) expect(delay).toBeLessThan(1000);
    expect(cliDoneMs).toBeGreaterThan(0);
  });

  it("never writes the key to either replica's log", async () => {
    const created = await runKeysCli(['create', '--name', 'logs', '--environment', 'production', '--json'], env);
    const { key } = JSON.parse(created.stdout) as { key: string };
    for (const replica of replicas) await status(replica, key);
    for (const replica of replicas) {
      await waitFor(async () => replica.output().includes('"consumer":"logs"'), 2000);
      expect(replica.output()).not.toContain(key);
      expect(replica.output()).not.toMatch(/psk_(live|test)_/);
    }
  });
});

describe('the admin API of one replica', () => {
  it('creates a key both accept, and revokes it on both within a second', async () => {
    const created = await adminRequest(replicas[0]!.adminPort, '/admin/keys', { method: 'POST', body: { name: 'acme' } });
    const { id, key } = created.body as { id: string; key: string };
    for (const replica of replicas) expect(await status(replica, key)).toBe(200);

    expect((await adminRequest(replicas[0]!.adminPort, `/admin/keys/${id}`, { method: 'DELETE' })).status).toBe(204);
    const delays = await Promise.all(replicas.map((replica) => waitFor(async () => (await status(replica, key)) === 401, 1000, 10)));
    for (const delay of delays) expect(delay).toBeLessThan(1000);
  });

  it('writes the audit line, and neither the admin token nor the key, to the log', async () => {
    const created = await adminRequest(replicas[1]!.adminPort, '/admin/keys', {
      method: 'POST',
      body: { name: 'logged' },
      headers: { 'x-request-id': 'replica-audit-01' },
    });
    const { key } = created.body as { key: string };
    await waitFor(async () => replicas[1]!.output().includes('replica-audit-01'), 3000);
    const line = replicas[1]!
      .output()
      .split('\n')
      .find((entry) => entry.includes('replica-audit-01'))!;
    expect(JSON.parse(line)).toMatchObject({ level: 30, action: 'create_key', result: 'success', reqId: 'replica-audit-01' });
    for (const replica of replicas) {
      expect(replica.output()).not.toContain(ADMIN_TOKEN);
      expect(replica.output()).not.toContain(key);
    }
  });
});

describe('npm run keys -- --admin-url', () => {
  it('creates, shows, sets a limit on and revokes a key with neither Redis nor the pepper', async () => {
    const created = await runKeysCli(['create', '--consumer', 'remote', '--json', '--admin-url', adminUrl], operator);
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const issued = JSON.parse(created.stdout) as { id: string; key: string; consumer: string; environments: string[]; revoked: boolean };
    expect(issued).toMatchObject({ consumer: 'remote', environments: ['production'], revoked: false });
    expect(issued.key).toMatch(/^psk_live_/);
    expect(await status(replicas[1]!, issued.key)).toBe(200);

    const limited = await runKeysCli(['set-limit', issued.id, '7', '--json', '--admin-url', adminUrl], operator);
    expect(JSON.parse(limited.stdout)).toMatchObject({ id: issued.id, rateLimitPerMinute: 7 });

    const revoked = await runKeysCli(['revoke', issued.id, '--admin-url', adminUrl], operator);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(new RegExp(`^${issued.id} {2}revoked\n {2}consumer: {6}remote\n`));
    await waitFor(async () => (await status(replicas[1]!, issued.key)) === 401, 1000, 10);
  });

  it('prints what the Redis path prints', async () => {
    const created = await runKeysCli(['create', '--name', 'same', '--json', '--admin-url', adminUrl], operator);
    const { id } = JSON.parse(created.stdout) as { id: string };
    const viaApi = await runKeysCli(['show', id, '--admin-url', adminUrl], operator);
    const viaRedis = await runKeysCli(['show', id], { REDIS_URL: redis.url });
    expect(viaApi.stdout).toBe(viaRedis.stdout);
  });

  it('reads the token from --admin-token-file', async () => {
    const file = tokenFile(SECOND_ADMIN_TOKEN);
    const result = await runKeysCli(['list', '--json', '--admin-url', adminUrl, '--admin-token-file', file], {
      REDIS_URL: 'redis://127.0.0.1:1',
    }).finally(() => removeTokenFile(file));
    expect(result.code).toBe(0);
    expect(result.stdout).toBe((await runKeysCli(['list', '--json'], { REDIS_URL: redis.url })).stdout);
  });

  it('exits 1 with the API’s message on a refusal', async () => {
    const result = await runKeysCli(['show', 'key_doesnotexist', '--admin-url', adminUrl], operator);
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'keys: the admin API refused: no key with id key_doesnotexist (404 not_found)\n' });
  });

  it('exits 1 on a wrong token', async () => {
    const result = await runKeysCli(['list', '--admin-url', adminUrl], { ...operator, ADMIN_API_TOKEN: 'w'.repeat(40) });
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'keys: the admin API refused: The admin token is not valid (401 unauthorized)\n' });
  });

  it('exits 1 without a token', async () => {
    const result = await runKeysCli(['list', '--admin-url', adminUrl], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'keys: --admin-url needs the admin token: set ADMIN_API_TOKEN or pass --admin-token-file\n' });
  });
});

describe('npm run deprecations -- --admin-url', () => {
  it('starts, lists and stops a brownout, and reads the report', async () => {
    const started = await runDeprecationsCli(['brownout', 'start', 'getPet', '--minutes', '5', '--admin-url', adminUrl], operator);
    expect(started.stderr).toBe('');
    expect(started.stdout).toMatch(/^brownout of getPet started: refused with 410 brownout until \d{4}-\d{2}-\d{2}T[\d:.]+Z\n$/);
    const listed = await runDeprecationsCli(['brownout', 'list', '--json', '--admin-url', adminUrl], operator);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ operation: 'getPet', state: 'active', source: 'operator' }]);
    const stopped = await runDeprecationsCli(['brownout', 'stop', 'getPet', '--admin-url', adminUrl], operator);
    expect(stopped.stdout).toBe('brownout of getPet stopped\n');
    const report = await runDeprecationsCli(['report', '--json', '--admin-url', adminUrl], operator);
    expect(report.code).toBe(0);
    expect(JSON.parse(report.stdout)).toEqual(await (await fetch(`${adminUrl}/deprecations`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } })).json());
  });
});
