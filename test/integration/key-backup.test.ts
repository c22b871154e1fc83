// Backup and restore of the key store: `keys export` from one Redis, `keys import` into another, and a gateway there serves the same keys.
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pepperFingerprint } from '../../src/auth/pepper-fingerprint.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startCluster, type PrivateCluster } from '../../support/start-cluster.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { refusedPort, startPetStore } from '../../support/start-upstream.ts';

const PEPPER = 'key-backup-test-pepper-000001';
const PREFIX = 'petstore-gateway:';

let source: PrivateRedis;
let target: PrivateRedis;
let backend: SampleBackend;
let dir: string;
let file: string;
const keys: Record<'plain' | 'revoked' | 'quota' | 'expiring', { id: string; key: string }> = {} as never;

const envOf = (redis: PrivateRedis) => ({ REDIS_URL: redis.url, API_KEY_PEPPER: PEPPER, GATEWAY_ENVIRONMENT: 'staging' });

async function keysCli(redis: PrivateRedis, ...args: string[]) {
  return runKeysCli(args, envOf(redis));
}

async function create(...args: string[]): Promise<{ id: string; key: string }> {
  const result = await keysCli(source, 'create', '--environment', 'staging', '--json', ...args);
  expect(result.stderr).toBe('');
  return JSON.parse(result.stdout) as { id: string; key: string };
}

beforeAll(async () => {
  [source, target, backend] = await Promise.all([startRedis(), startRedis(), startPetStore()]);
  dir = mkdtempSync(join(tmpdir(), 'key-backup-'));
  file = join(dir, 'keys.jsonl');
  keys.plain = await create('--consumer', 'plain');
  keys.revoked = await create('--consumer', 'revoked');
  keys.quota = await create('--consumer', 'quota', '--opt-in', 'beta', '--rate-limit-per-minute', '30');
  keys.expiring = await create('--consumer', 'expiring', '--expires-at', '2099-01-01T00:00:00Z');
  expect((await keysCli(source, 'revoke', keys.revoked.id)).code).toBe(0);
  // The quota fields as the lead's KeyRecord stores them (the quota flags of `create` are another change's).
  const hash = await source.client.get(`${PREFIX}{keys}:key-id:${keys.quota.id}`);
  await source.client.hset(`${PREFIX}{keys}:key:${hash}`, { quotaPerDay: '1000', quotaPerMonth: '20000' });
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await Promise.all([source?.stop(), target?.stop(), backend?.close()]);
});

describe('keys export', () => {
  it('writes a header and one line per key, to a file only its owner reads', async () => {
    const result = await keysCli(source, 'export', '--output', file);
    expect(result).toMatchObject({ code: 0, stderr: `keys: exported 4 key(s) to ${file}\n` });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const [header, ...lines] = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(header).toEqual({
      format: 'petstore-gateway-keys',
      version: 1,
      pepperFingerprint: pepperFingerprint(PEPPER),
      exportedAt: expect.any(String),
      keys: 4,
    });
    expect(lines.map((line) => line.consumer)).toEqual(['plain', 'revoked', 'quota', 'expiring']);
    expect(lines[2]).toEqual({
      keyHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      id: keys.quota.id,
      consumer: 'quota',
      environments: ['staging'],
      createdAt: expect.any(String),
      revoked: false,
      rateLimitPerMinute: 30,
      quotaPerDay: 1000,
      quotaPerMonth: 20000,
      optedIn: ['beta'],
    });
  });

  it('never writes a secret or the pepper', () => {
    const text = readFileSync(file, 'utf8');
    for (const { key } of Object.values(keys)) expect(text).not.toContain(key);
    expect(text).not.toContain(PEPPER);
  });

  it('is refused with --admin-url', async () => {
    const result = await keysCli(source, '--admin-url', 'http://127.0.0.1:1', 'export');
    expect(result).toMatchObject({ code: 1, stderr: 'keys: export works on Redis directly (REDIS_URL); it is not available with --admin-url\n' });
  });
});

describe('keys export --output, never losing the backup there', () => {
  let place: string;
  beforeAll(() => {
    place = mkdtempSync(join(tmpdir(), 'key-backup-output-'));
  });
  afterAll(() => rmSync(place, { recursive: true, force: true }));

  it('leaves the previous backup as it was when Redis is down, and no file beside it', async () => {
    const previous = join(place, 'previous.jsonl');
    writeFileSync(previous, 'the previous backup\n');
    const down = `redis://127.0.0.1:${await refusedPort()}`;
    const result = await runKeysCli(['export', '--output', previous], { REDIS_URL: down, API_KEY_PEPPER: PEPPER, GATEWAY_ENVIRONMENT: 'staging' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^keys: Redis at redis:\/\/127\.0\.0\.1:\d+ is unreachable/);
    expect(readFileSync(previous, 'utf8')).toBe('the previous backup\n');
    expect(readdirSync(place)).toEqual(['previous.jsonl']);
  });

  it('replaces a symlink at the destination with the file, its target untouched', async () => {
    const target = join(place, 'elsewhere.txt');
    const link = join(place, 'linked.jsonl');
    writeFileSync(target, 'not a backup\n');
    symlinkSync(target, link);
    expect((await keysCli(source, 'export', '--output', link)).code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(false);
    expect(statSync(link).mode & 0o777).toBe(0o600);
    // The same export as the file's above, but for its instant.
    const withoutInstant = (text: string) => text.replace(/"exportedAt":"[^"]+"/, '');
    expect(withoutInstant(readFileSync(link, 'utf8'))).toBe(withoutInstant(readFileSync(file, 'utf8')));
    expect(readFileSync(target, 'utf8')).toBe('not a backup\n');
  });

  it('replaces a dangling symlink with the file, creating no file where it pointed', async () => {
    const nowhere = join(place, 'nowhere.txt');
    const link = join(place, 'dangling.jsonl');
    symlinkSync(nowhere, link);
    expect((await keysCli(source, 'export', '--output', link)).code).toBe(0);
    expect(lstatSync(link).isFile()).toBe(true);
    expect(existsSync(nowhere)).toBe(false);
  });
});

describe('keys import', () => {
  it('--dry-run says what it would create and writes nothing', async () => {
    const result = await keysCli(target, 'import', file, '--dry-run');
    expect(result).toMatchObject({ code: 0, stdout: 'dry run, nothing written: would have created 4, changed 0, left unchanged 0\n' });
    expect(await target.client.dbsize()).toBe(0);
  });

  it('refuses a file made with another pepper and writes nothing', async () => {
    const other = join(dir, 'other-pepper.jsonl');
    writeFileSync(other, readFileSync(file, 'utf8').replace(pepperFingerprint(PEPPER), pepperFingerprint('another-pepper-0000000001')));
    const result = await keysCli(target, 'import', other);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "keys: refusing to import: the file's keys were made with another pepper than this CLI's (API_KEY_PEPPER or API_KEY_PEPPER_FILE); nothing was written\n",
    );
    expect(await target.client.dbsize()).toBe(0);
  });

  it('refuses a file made with another pepper before it asks Redis (Redis down: still the pepper refusal)', async () => {
    const other = join(dir, 'other-pepper-no-redis.jsonl');
    writeFileSync(other, readFileSync(file, 'utf8').replace(pepperFingerprint(PEPPER), pepperFingerprint('another-pepper-0000000001')));
    const down = `redis://127.0.0.1:${await refusedPort()}`;
    const result = await runKeysCli(['import', other], { REDIS_URL: down, API_KEY_PEPPER: PEPPER, GATEWAY_ENVIRONMENT: 'staging' });
    expect(result).toMatchObject({
      code: 1,
      stderr:
        "keys: refusing to import: the file's keys were made with another pepper than this CLI's (API_KEY_PEPPER or API_KEY_PEPPER_FILE); nothing was written\n",
    });
  });

  it('refuses a line past the bound, naming it, before it asks Redis', async () => {
    const huge = join(dir, 'huge-line.jsonl');
    const [header] = readFileSync(file, 'utf8').split('\n');
    writeFileSync(huge, `${header}\n{"keyHash":"${'a'.repeat(50 * 1024 * 1024)}"}\n`);
    const down = `redis://127.0.0.1:${await refusedPort()}`;
    const result = await runKeysCli(['import', huge], { REDIS_URL: down, API_KEY_PEPPER: PEPPER, GATEWAY_ENVIRONMENT: 'staging' });
    expect(result).toMatchObject({
      code: 1,
      stderr: `keys: ${huge}, line 2: longer than 16384 bytes, the most a line of a key export can be; nothing was written\n`,
    });
  });

  it('refuses a damaged file, naming the line, and writes nothing', async () => {
    const damaged = join(dir, 'damaged.jsonl');
    const lines = readFileSync(file, 'utf8').split('\n');
    lines[3] = lines[3]!.replace('"revoked":false', '"revoked":"no"');
    writeFileSync(damaged, lines.join('\n'));
    const result = await keysCli(target, 'import', damaged);
    expect(result).toMatchObject({ code: 1, stderr: `keys: ${damaged}, line 4: revoked is not true or false; nothing was written\n` });
    expect(await target.client.dbsize()).toBe(0);
  });

  it('refuses a file cut short', async () => {
    const cut = join(dir, 'cut.jsonl');
    writeFileSync(cut, readFileSync(file, 'utf8').split('\n').slice(0, 3).join('\n'));
    const result = await keysCli(target, 'import', cut);
    expect(result).toMatchObject({
      code: 1,
      stderr: `keys: ${cut}, line 3: the header announces 4 keys but the file holds 2 (cut short?); nothing was written\n`,
    });
    expect(await target.client.dbsize()).toBe(0);
  });

  it('restores every key into an empty Redis, claiming the pepper fingerprint', async () => {
    const result = await keysCli(target, 'import', file, '--json');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(result.stdout)).toEqual({ created: 4, changed: 0, unchanged: 0, keptRevoked: 0, dryRun: false });
    expect(await target.client.get(`${PREFIX}{keys}:pepper-fingerprint`)).toBe(pepperFingerprint(PEPPER));
    expect(await target.client.get(`${PREFIX}{keys}:key-events-epoch`)).toBe('4');
    expect((await keysCli(target, 'list', '--json')).stdout).toBe((await keysCli(source, 'list', '--json')).stdout);
  });

  it('a second import reports every key unchanged', async () => {
    const result = await keysCli(target, 'import', file);
    expect(result).toMatchObject({ code: 0, stdout: 'created 0, changed 0, unchanged 4\n' });
  });

  it('makes a changed key match the file, but never un-revokes one', async () => {
    expect((await keysCli(target, 'set-limit', keys.plain.id, '7')).code).toBe(0);
    expect((await keysCli(target, 'revoke', keys.expiring.id)).code).toBe(0);
    const result = await keysCli(target, 'import', file);
    expect(result).toMatchObject({ code: 0, stdout: 'created 0, changed 1, unchanged 3\n1 key(s) revoked in Redis but not in the file stay revoked\n' });
    expect(JSON.parse((await keysCli(target, 'show', keys.plain.id, '--json')).stdout)).not.toHaveProperty('rateLimitPerMinute');
    expect(JSON.parse((await keysCli(target, 'show', keys.expiring.id, '--json')).stdout)).toMatchObject({ revoked: true });
  });

  it('refuses a file whose pepper differs from the one in the target Redis', async () => {
    const elsewhere = await startRedis();
    try {
      await elsewhere.client.set(`${PREFIX}{keys}:pepper-fingerprint`, pepperFingerprint('another-pepper-0000000001'));
      const result = await keysCli(elsewhere, 'import', file);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^keys: refusing to import: the pepper \(API_KEY_PEPPER or API_KEY_PEPPER_FILE\) differs .*; nothing was written\n$/);
      expect(await elsewhere.client.dbsize()).toBe(1);
    } finally {
      await elsewhere.stop();
    }
  });
});

describe('a gateway on the restored Redis', () => {
  let gateway: RedisGateway;
  let fresh: PrivateRedis;
  beforeAll(async () => {
    // Running before the import, as after an emptied Redis: it has cached the keys' absence.
    fresh = await startRedis();
    const config = loadConfig({ PORT: '0', ADMIN_PORT: '0', REDIS_URL: fresh.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'staging' });
    gateway = await startRedisGateway(config, { pepper: PEPPER });
  });
  afterAll(async () => {
    await gateway?.close();
    await fresh?.stop();
  });

  const status = async (key: string) => {
    const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    return res.status;
  };

  it('refuses every key before the import, then serves them with their old secrets, without a restart', async () => {
    expect(await status(keys.plain.key)).toBe(401);
    expect((await keysCli(fresh, 'import', file)).code).toBe(0);
    // The import's changed events evict the cached absence (the epoch check, every second, would too).
    await waitFor(async () => (await status(keys.plain.key)) === 200, 3000, 50);
    expect(await status(keys.quota.key)).toBe(200);
    expect(await status(keys.expiring.key)).toBe(200);
  });

  it('refuses the revoked key', async () => {
    expect(await status(keys.revoked.key)).toBe(401);
  });
});

describe('a Redis Cluster (every key name in one slot)', () => {
  let cluster: PrivateCluster;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 30_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('restores the file, and exports the same keys back', async () => {
    const env = { REDIS_CLUSTER_NODES: cluster.nodes, API_KEY_PEPPER: PEPPER, GATEWAY_ENVIRONMENT: 'staging' };
    const imported = await runKeysCli(['import', file], env);
    expect(imported).toMatchObject({ code: 0, stdout: 'created 4, changed 0, unchanged 0\n', stderr: '' });
    const exported = await runKeysCli(['export'], env);
    const withoutInstant = (text: string) => text.replace(/"exportedAt":"[^"]+"/, '');
    expect(withoutInstant(exported.stdout)).toBe(withoutInstant(readFileSync(file, 'utf8')));
  });
});
