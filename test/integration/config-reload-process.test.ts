// SIGHUP to the real gateway process (npm start): the configuration file is re-read, checked, and taken up or refused, without a restart.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { PROJECT_ROOT, startGatewayProcess, waitFor, type GatewayProcess, waitUntilReady } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';

let redis: PrivateRedis;
let upstream: Server;
let dir: string;
let configFile: string;
let baseConfig: Record<string, unknown>;
let env: Record<string, string>;
let gateway: GatewayProcess;

/** Writes the gateway's configuration file: the shipped one, its document by absolute path, with `changes` laid over it. */
async function writeConfig(changes: Record<string, unknown>): Promise<void> {
  await writeFile(configFile, stringifyYaml({ ...baseConfig, contract: join(PROJECT_ROOT, 'config/petstore.openapi.yaml'), ...changes }));
}

async function newKey(): Promise<string> {
  const created = await runKeysCli(['create', '--name', 'reload', '--environment', 'staging', '--json'], env);
  return (JSON.parse(created.stdout) as { key: string }).key;
}

async function statuses(key: string, count: number): Promise<number[]> {
  const answered: number[] = [];
  for (let i = 0; i < count; i++)
    answered.push((await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } })).status);
  return answered;
}

async function reloads(result: 'success' | 'failure'): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text();
  return parseExposition(text).get(seriesKey('petstore_gateway_config_reloads_total', { result, environment: 'staging' }));
}

/** Sends SIGHUP and waits for the next log line with `message`, which it returns. */
async function hangUp(message: string): Promise<string> {
  const seen = gateway.output().length;
  gateway.child.kill('SIGHUP');
  const line = () =>
    gateway
      .output()
      .slice(seen)
      .split('\n')
      .find((entry) => entry.includes(message));
  await waitFor(async () => line() !== undefined);
  return line()!;
}

beforeAll(async () => {
  redis = await startRedis();
  upstream = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  dir = await mkdtemp(join(tmpdir(), 'config-reload-'));
  configFile = join(dir, 'gateway.yaml');
  baseConfig = parseYaml(await readFile(join(PROJECT_ROOT, 'config/gateway.yaml'), 'utf8')) as Record<string, unknown>;
  await writeConfig({});
  env = { GATEWAY_CONFIG: configFile, REDIS_URL: redis.url, UPSTREAM_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1` };
  gateway = await startGatewayProcess(env);
  await waitUntilReady(gateway);
});
afterAll(async () => {
  await gateway?.stop();
  upstream?.close();
  await redis?.stop();
  await rm(dir, { recursive: true, force: true });
});

const limits = (perWindow: number) => ({
  rateLimit: { ...(baseConfig.rateLimit as object), limits: { production: { default: 600 }, staging: { default: perWindow } } },
});

it('logs the configuration hash at start', () => {
  expect(gateway.output()).toMatch(/"configHash":"[0-9a-f]{16}","msg":"configuration loaded"/);
});

it('takes up a changed file on SIGHUP: new requests meet the new rate limit, and the process keeps running', async () => {
  const before = await reloads('success');
  await writeConfig(limits(2));
  const reloaded = JSON.parse(await hangUp('"msg":"configuration reloaded"')) as { changed: string[] };
  expect(reloaded.changed).toContain('rateLimit.limits.staging.default');
  expect(await statuses(await newKey(), 3)).toEqual([200, 200, 429]);
  expect(gateway.child.exitCode).toBeNull();
  expect(await reloads('success')).toBe(before! + 1);
});

it('refuses a file that does not validate with one line naming the key, and serves on with the running configuration', async () => {
  // Made first: the keys CLI reads the same configuration file.
  const key = await newKey();
  const before = await reloads('failure');
  await writeConfig({ ...limits(2), upstream: { timeoutMs: 'soon' } });
  const refused = await hangUp('configuration reload refused');
  expect(refused).toContain('upstream.timeoutMs');
  expect(await statuses(key, 3)).toEqual([200, 200, 429]);
  expect(await reloads('failure')).toBe(before! + 1);
});

it('names a changed setting that needs a restart, and takes up the rest', async () => {
  await writeConfig({ ...limits(1), listen: { ...(baseConfig.listen as object), maxConnections: 5 } });
  expect(await hangUp('take effect only after a restart')).toContain('"settings":["listen.maxConnections"]');
  expect(await statuses(await newKey(), 2)).toEqual([200, 429]);
});

it('says when an environment variable overrides the value the file now gives', async () => {
  // startGatewayProcess sets LOG_LEVEL=info, as the shipped Deployment does.
  await writeConfig({ ...limits(1), logging: { level: 'warn' } });
  expect(await hangUp('environment variables override')).toContain('"settings":["LOG_LEVEL (logging.level)"]');
});

it('refuses a pepper file the next restart could not read, though only a restart reads the pepper', async () => {
  const missing = join(dir, 'no-such-pepper');
  await writeConfig({ ...limits(1), auth: { ...(baseConfig.auth as object), pepperFile: missing } });
  const refused = await hangUp('configuration reload refused');
  expect(refused).toContain(`API_KEY_PEPPER_FILE (auth.pepperFile): ${missing} could not be read`);
});
