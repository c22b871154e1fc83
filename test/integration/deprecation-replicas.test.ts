// Two gateway processes (npm start's entry point) on one Redis: brownouts and the deprecation report with the CLI.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { DEFAULT_CONFIG_FILE } from '../../src/config/load-config.ts';
import { KeyAdmin } from '../../src/auth/key-admin.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import { publishBrownoutOverride } from '../../src/policy/brownout-events.ts';
import { systemClock } from '../../src/time/clock.ts';
import { runDeprecationsCli } from '../helpers/run-keys-cli.ts';
import { startGatewayProcess, waitFor, type GatewayProcess, waitUntilReady } from '../../support/start-gateway-process.ts';
import type { PrivateRedis } from '../../support/start-redis.ts';
import { startReplicas, type Replicas } from '../../support/start-replicas.ts';

const PEPPER = 'deprecation-replicas-pepper-01';
const KEY_PREFIX = 'petstore-gateway:';
const FLUSH_MS = 200;

let redis: PrivateRedis;
let replicas: GatewayProcess[];
let env: Record<string, string>;
let admin: KeyAdmin;
let started: Replicas;

beforeAll(async () => {
  started = await startReplicas(2, { API_KEY_PEPPER: PEPPER, DEPRECATION_REPORT_FLUSH_MS: String(FLUSH_MS) });
  ({ redis, replicas, env } = started);
  admin = new KeyAdmin(redis.client, { keyPrefix: KEY_PREFIX, hashKey: createKeyHasher(PEPPER), clock: systemClock });
});
// No brownout outlives its test.
afterEach(() => publishBrownoutOverride(redis.client, KEY_PREFIX, 'getPet', undefined, Date.now()));
afterAll(() => started?.stop());

async function getPet(replica: GatewayProcess, key: string): Promise<{ status: number; code?: string }> {
  const res = await fetch(`http://127.0.0.1:${replica.port}/v1/pets/1`, { headers: { Authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { code?: string };
  return { status: res.status, ...(res.status === 410 ? { code: body.code } : {}) };
}

async function newKey(consumer: string): Promise<{ id: string; key: string }> {
  const { key, record } = await admin.create({ consumer, environments: ['production'] });
  return { id: record.id, key };
}

async function report(): Promise<Array<Record<string, unknown>>> {
  const result = await runDeprecationsCli(['report', '--json'], env);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  expect(result.stdout.endsWith('\n')).toBe(true);
  expect(result.stdout.trimEnd().split('\n')).toHaveLength(1);
  return JSON.parse(result.stdout) as Array<Record<string, unknown>>;
}

describe('brownouts started with the CLI', () => {
  it('refuse getPet on both replicas within a second of `brownout start`', async () => {
    const { key } = await newKey('brownout-start');
    for (const replica of replicas) expect(await getPet(replica, key)).toEqual({ status: 200 });
    const started = await runDeprecationsCli(['brownout', 'start', 'getPet', '--minutes', '10'], env);
    expect(started.code).toBe(0);
    expect(started.stdout).toMatch(/^brownout of getPet started: refused with 410 brownout until \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\n$/);
    const delays = await Promise.all(replicas.map((replica) => waitFor(async () => (await getPet(replica, key)).code === 'brownout', 1000, 10)));
    for (const delay of delays) expect(delay).toBeLessThan(1000);
  });

  it('end on both replicas within a second of `brownout stop`', async () => {
    const { key } = await newKey('brownout-stop');
    expect((await runDeprecationsCli(['brownout', 'start', 'getPet', '--minutes', '10'], env)).code).toBe(0);
    await Promise.all(replicas.map((replica) => waitFor(async () => (await getPet(replica, key)).status === 410, 1000, 10)));
    const stopped = await runDeprecationsCli(['brownout', 'stop', 'getPet'], env);
    expect(stopped).toEqual({ code: 0, stdout: 'brownout of getPet stopped\n', stderr: '' });
    const delays = await Promise.all(replicas.map((replica) => waitFor(async () => (await getPet(replica, key)).status === 200, 1000, 10)));
    for (const delay of delays) expect(delay).toBeLessThan(1000);
  });

  it('are listed as active, with the window the CLI set', async () => {
    const before = Date.now();
    expect((await runDeprecationsCli(['brownout', 'start', 'getPet', '--minutes', '90'], env)).code).toBe(0);
    const listed = await runDeprecationsCli(['brownout', 'list', '--json'], env);
    expect(listed.code).toBe(0);
    const [entry, ...rest] = JSON.parse(listed.stdout) as Array<{ operation: string; state: string; source: string; start: string; end: string }>;
    expect(rest).toEqual([]);
    expect(entry).toEqual({ operation: 'getPet', state: 'active', source: 'operator', start: entry!.start, end: entry!.end });
    expect(Date.parse(entry!.end) - Date.parse(entry!.start)).toBe(90 * 60_000);
    expect(Date.parse(entry!.start)).toBeGreaterThanOrEqual(before);
  });

  it('`brownout stop` with none in progress exits 1', async () => {
    const result = await runDeprecationsCli(['brownout', 'stop', 'getPet'], env);
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'deprecations: no brownout of getPet is in progress\n' });
  });
});

describe('brownouts scheduled in config', () => {
  /** The shipped configuration with one window on getPet, in force now. */
  function configWithWindow(start: number, end: number): { file: string; remove(): void } {
    const dir = mkdtempSync(join(tmpdir(), 'gateway-config-'));
    const config = parseYaml(readFileSync(DEFAULT_CONFIG_FILE, 'utf8')) as { contract: string; deprecations: { getPet: { brownouts: unknown[] } } };
    config.contract = join(DEFAULT_CONFIG_FILE, '..', config.contract);
    config.deprecations.getPet.brownouts = [{ start: new Date(start).toISOString(), end: new Date(end).toISOString() }];
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, stringifyYaml(config));
    return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
  }

  it('are listed, and `brownout stop` cancels the one in force until its end', async () => {
    const [start, end] = [Date.now() - 60_000, Date.now() + 3_600_000];
    const scheduled = configWithWindow(start, end);
    try {
      const withWindow = { ...env, GATEWAY_CONFIG: scheduled.file };
      const listed = await runDeprecationsCli(['brownout', 'list', '--json'], withWindow);
      expect(JSON.parse(listed.stdout)).toEqual([
        { operation: 'getPet', state: 'active', source: 'schedule', start: new Date(start).toISOString(), end: new Date(end).toISOString() },
      ]);
      const stopped = await runDeprecationsCli(['brownout', 'stop', 'getPet'], withWindow);
      expect(stopped).toEqual({
        code: 0,
        stdout: `brownout of getPet stopped; the scheduled window stays cancelled until ${new Date(end).toISOString()}\n`,
        stderr: '',
      });
      expect(await runDeprecationsCli(['brownout', 'list', '--json'], withWindow)).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
    } finally {
      scheduled.remove();
    }
  });
});

describe('usage errors exit 2, before Redis is asked', () => {
  it.each([
    ['an unknown subcommand', ['frobnicate'], "deprecations: error: unknown command 'frobnicate'\n"],
    ['a missing --minutes', ['brownout', 'start', 'getPet'], "deprecations: error: required option '--minutes <n>' not specified\n"],
    [
      'a bad --minutes',
      ['brownout', 'start', 'getPet', '--minutes', 'ten'],
      "deprecations: error: option '--minutes <n>' argument 'ten' is invalid. must be a positive integer\n",
    ],
    [
      'a zero --minutes',
      ['brownout', 'start', 'getPet', '--minutes', '0'],
      "deprecations: error: option '--minutes <n>' argument '0' is invalid. must be a positive integer\n",
    ],
    ['a missing operation', ['brownout', 'stop'], "deprecations: error: missing required argument 'operationId'\n"],
    [
      'an operation that is not deprecated',
      ['brownout', 'start', 'listPets', '--minutes', '5'],
      "deprecations: error: 'listPets' is not a deprecated operation of the interface document; only deprecated operations can be browned out (deprecated: getPet)\n",
    ],
    [
      'an operation the document does not have',
      ['brownout', 'stop', 'deletePet'],
      "deprecations: error: 'deletePet' is not a deprecated operation of the interface document; only deprecated operations can be browned out (deprecated: getPet)\n",
    ],
    ['an unknown option', ['report', '--csv'], "deprecations: error: unknown option '--csv'\n"],
    [
      'an extra argument',
      ['brownout', 'stop', 'getPet', 'listPets'],
      "deprecations: error: too many arguments for 'stop'. Expected 1 argument but got 2: getPet, listPets.\n",
    ],
  ])('%s: %j', async (_kind, args, message) => {
    // An unreachable Redis: were the arguments accepted, the command would fail with 1, not 2.
    const result = await runDeprecationsCli(args, { ...env, REDIS_URL: 'redis://127.0.0.1:1' });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.slice(0, message.length)).toBe(message);
    expect(result.stderr).toContain('Usage: deprecations ');
  });
});

describe('the report', () => {
  it('counts the calls made through both replicas exactly, once flushed', async () => {
    const { id, key } = await newKey('report-both');
    const before = Date.now();
    for (let call = 0; call < 3; call++) expect((await getPet(replicas[0]!, key)).status).toBe(200);
    for (let call = 0; call < 2; call++) expect((await getPet(replicas[1]!, key)).status).toBe(200);
    const rowOf = async () => (await report()).find((row) => row.keyId === id);
    await waitFor(async () => Number((await rowOf())?.calls ?? 0) >= 5, 5000, FLUSH_MS);
    const row = (await rowOf())!;
    // Seen when each response completed, which may be a moment after the client read it: bounded by the flush.
    const after = Date.now();
    expect(row).toEqual({ operation: 'getPet', keyId: id, consumer: 'report-both', calls: 5, firstSeen: row.firstSeen, lastSeen: row.lastSeen });
    expect(Date.parse(row.firstSeen as string)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(row.firstSeen as string)).toBeLessThan(Date.parse(row.lastSeen as string));
    expect(Date.parse(row.lastSeen as string)).toBeLessThanOrEqual(after);
  });

  it('is served as the same JSON by GET /deprecations on either admin listener', async () => {
    const { id, key } = await newKey('report-admin');
    await getPet(replicas[0]!, key);
    await waitFor(async () => (await report()).some((row) => row.keyId === id), 5000, FLUSH_MS);
    const fromCli = await report();
    for (const replica of replicas) {
      const res = await fetch(`http://127.0.0.1:${replica.adminPort}/deprecations`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await res.json()).toEqual(fromCli);
    }
  });

  it("holds a replica's calls written when it shuts down, however long its flush interval", async () => {
    const { id, key } = await newKey('report-shutdown');
    const slow = await startGatewayProcess({ ...env, DEPRECATION_REPORT_FLUSH_MS: '3600000' });
    await waitUntilReady(slow);
    await getPet(slow, key);
    await getPet(slow, key);
    expect((await report()).some((row) => row.keyId === id)).toBe(false);
    expect(await slow.stop()).toBe(0);
    expect((await report()).find((row) => row.keyId === id)).toMatchObject({ consumer: 'report-shutdown', calls: 2 });
  });
});
