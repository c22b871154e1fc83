// A reload without a pid: POST /admin/config/reload on a gateway process, through `npm run config -- reload --admin-url`, answered by key.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { ADMIN_TOKEN, removeTokenFile, tokenFile } from '../helpers/admin-api.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { runCli } from '../helpers/run-keys-cli.ts';
import { PROJECT_ROOT, startGatewayProcess, type GatewayProcess } from '../../support/start-gateway-process.ts';

let dir: string;
let configFile: string;
let tokens: string;
let baseConfig: Record<string, unknown>;
let gateway: GatewayProcess;

async function writeConfig(changes: Record<string, unknown>): Promise<void> {
  await writeFile(configFile, stringifyYaml({ ...baseConfig, contract: join(PROJECT_ROOT, 'config/petstore.openapi.yaml'), ...changes }));
}

const reload = (...args: string[]) =>
  runCli('src/cli/config.ts', ['reload', '--admin-url', `http://127.0.0.1:${gateway.adminPort}`, '--admin-token-file', tokens, ...args], {});

async function reloadActions(result: 'success' | 'refused'): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text();
  return parseExposition(text).get(seriesKey('petstore_gateway_admin_actions_total', { action: 'reload_config', result, environment: 'staging' }));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'config-reload-admin-'));
  configFile = join(dir, 'gateway.yaml');
  tokens = tokenFile(ADMIN_TOKEN);
  baseConfig = parseYaml(await readFile(join(PROJECT_ROOT, 'config/gateway.yaml'), 'utf8')) as Record<string, unknown>;
  await writeConfig({});
  // Redis is not needed to reload: none is reachable here.
  gateway = await startGatewayProcess({ GATEWAY_CONFIG: configFile, ADMIN_API_TOKEN_FILE: tokens, REDIS_URL: 'redis://127.0.0.1:1' });
});
afterAll(async () => {
  await gateway?.stop();
  removeTokenFile(tokens);
  await rm(dir, { recursive: true, force: true });
});

it('reloads and prints the keys that changed and the ones that need a restart', async () => {
  const before = (await reloadActions('success')) ?? 0;
  await writeConfig({ requests: { ...(baseConfig.requests as object), maxBodyBytes: 100 } });
  const result = await reload();
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  expect(result.stdout).toMatch(/^reloaded \(configHash [0-9a-f]{16}\)\nchanged: requests\.maxBodyBytes\nneeds a restart: none\n$/);
  expect(await reloadActions('success')).toBe(before + 1);
});

it('answers the admin API’s JSON with --json, naming a restart setting by its key', async () => {
  await writeConfig({ requests: { ...(baseConfig.requests as object), maxBodyBytes: 100 }, listen: { ...(baseConfig.listen as object), maxConnections: 5 } });
  const result = await reload('--json');
  expect(result.code).toBe(0);
  expect(JSON.parse(result.stdout)).toEqual({
    result: 'success',
    changed: [],
    needRestart: ['listen.maxConnections'],
    configHash: expect.stringMatching(/^[0-9a-f]{16}$/),
  });
});

it('exits 1 on a refused reload, printing each fault by key, and the gateway serves on', async () => {
  const before = (await reloadActions('refused')) ?? 0;
  await writeConfig({ upstream: { ...(baseConfig.upstream as object), timeoutMs: 'soon' } });
  const result = await reload();
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  expect(result.stderr).toBe(
    `config: the admin API refused: The configuration was refused; the running one stays: invalid configuration in ${configFile}: upstream.timeoutMs: must be a whole number of milliseconds, at least 1 (409 conflict)\n`,
  );
  expect(await reloadActions('refused')).toBe(before + 1);
  expect(gateway.child.exitCode).toBeNull();
});

it('prints a refusal of several faults one fault a line', async () => {
  await writeConfig({ upstream: { ...(baseConfig.upstream as object), timeoutMs: 'soon', totalTimeoutMs: 'later' } });
  const result = await reload();
  expect(result.code).toBe(1);
  expect(result.stderr.split('\n').slice(1, 3)).toEqual([
    '  upstream.timeoutMs: must be a whole number of milliseconds, at least 1',
    '  upstream.totalTimeoutMs: must be a whole number of milliseconds, at least 1 (409 conflict)',
  ]);
});

it('needs the admin token, and says where it is read from', async () => {
  const result = await runCli('src/cli/config.ts', ['reload', '--admin-url', `http://127.0.0.1:${gateway.adminPort}`], {});
  expect(result).toEqual({ code: 1, stdout: '', stderr: 'config: --admin-url needs the admin token: set ADMIN_API_TOKEN or pass --admin-token-file\n' });
});
