// npm run config -- validate [FILE]: the checks of start-up and reload, without a port or Redis; and a YAML error near a password, which no output quotes.
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { runCli } from '../helpers/run-keys-cli.ts';
import { PROJECT_ROOT, START_ARGS, startGatewayProcess, waitFor } from '../../support/start-gateway-process.ts';

const PASSWORD = 'hunter2-very-secret-redis-password';
const dir = mkdtempSync(join(tmpdir(), 'config-validate-'));
const shipped = parseYaml(readFileSync(join(PROJECT_ROOT, 'config/gateway.yaml'), 'utf8')) as Record<string, unknown>;

/** A configuration file: the shipped one, its document by absolute path, `changes` laid over it. */
function configFile(name: string, changes: Record<string, unknown> = {}): string {
  const file = join(dir, name);
  writeFileSync(file, stringifyYaml({ ...shipped, contract: join(PROJECT_ROOT, 'config/petstore.openapi.yaml'), ...changes }));
  return file;
}

/** A file whose `redis.password` line has an unclosed quote: YAML's own message would quote the line. */
function brokenNearPassword(name: string): string {
  const { redis: _redis, ...rest } = shipped;
  const file = join(dir, name);
  const redis = `redis:\n  url: redis://127.0.0.1:1\n  password: "${PASSWORD}\n  keyPrefix: 'x'\n`;
  writeFileSync(file, `${stringifyYaml({ ...rest, contract: join(PROJECT_ROOT, 'config/petstore.openapi.yaml') })}${redis}`);
  return file;
}

/** A TCP server standing in for Redis: it counts the connections a command opens. */
let fakeRedis: Server;
let connections = 0;
let env: Record<string, string>;
beforeAll(async () => {
  fakeRedis = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => fakeRedis.listen(0, '127.0.0.1', resolve));
  env = { REDIS_URL: `redis://127.0.0.1:${(fakeRedis.address() as { port: number }).port}` };
});
afterAll(() => {
  fakeRedis.close();
  rmSync(dir, { recursive: true, force: true });
});

const validate = (args: string[], extra: Record<string, string> = {}) => runCli('src/cli/config.ts', ['validate', ...args], { ...env, ...extra });

describe('npm run config -- validate', () => {
  it('prints OK and exits 0 for a configuration start-up would take, without connecting to Redis', async () => {
    const result = await validate([configFile('good.yaml')]);
    expect(result).toEqual({ code: 0, stdout: 'OK\n', stderr: '' });
    expect(connections).toBe(0);
  });

  it('refuses a misspelt variable, naming the one meant, where a typo used to pass as OK', async () => {
    const result = await validate([configFile('typo.yaml')], { GATEWAY_ENVIROMENT: 'production' });
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'invalid environment variable GATEWAY_ENVIROMENT: not a setting of the gateway (did you mean GATEWAY_ENVIRONMENT?); docs/configuration.md lists every variable\n',
    });
  });

  it('checks GATEWAY_CONFIG’s file when given none', async () => {
    const result = await validate([], { GATEWAY_CONFIG: configFile('by-variable.yaml', { upstream: { timeoutMs: 'soon' } }) });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^invalid configuration in \S+by-variable\.yaml: upstream\.timeoutMs: [^\n]+\n$/);
  });

  it('prints each fault once, each naming its key or file, and exits 1', async () => {
    const missingDocument = join(dir, 'missing.openapi.yaml');
    const missingTokens = join(dir, 'missing-admin-tokens');
    const file = configFile('faults.yaml', { contract: missingDocument, adminApi: { tokenFile: missingTokens } });
    const result = await validate([file]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^config: contract: interface document ${missingDocument} could not be read`));
    expect(lines[1]).toMatch(new RegExp(`^ADMIN_API_TOKEN_FILE \\(adminApi\\.tokenFile\\): ${missingTokens} could not be read`));
  });

  it('names the file, line, column and key of a YAML error near the password, and never prints the password', async () => {
    const file = brokenNearPassword('broken.yaml');
    const result = await validate([file]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      new RegExp(`^GATEWAY_CONFIG: config file ${file} is not valid YAML: line \\d+, column \\d+, at key redis\\.password: [^\\n]+\\n$`),
    );
    expect(result.stderr).not.toContain(PASSWORD.slice(0, 8));
  });
});

describe('a YAML error near the password', () => {
  it('stops start-up with one line naming the file and the key, without the password', async () => {
    const file = brokenNearPassword('start.yaml');
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [...START_ARGS], { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', GATEWAY_CONFIG: file } }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
      ),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(`^petstore-gateway: could not start: GATEWAY_CONFIG: config file ${file} is not valid YAML: [^\\n]*redis\\.password[^\\n]*\\n$`),
    );
    expect(result.stdout + result.stderr).not.toContain(PASSWORD.slice(0, 8));
  });

  it('refuses a reload with one line naming the key, without the password', async () => {
    const file = configFile('reload.yaml');
    const gateway = await startGatewayProcess({ ...env, GATEWAY_CONFIG: file });
    try {
      writeFileSync(file, readFileSync(brokenNearPassword('reload-broken.yaml'), 'utf8'));
      gateway.child.kill('SIGHUP');
      await waitFor(async () => gateway.output().includes('configuration reload refused'));
      const refused = gateway
        .output()
        .split('\n')
        .filter((line) => line.includes('configuration reload refused'));
      expect(refused).toHaveLength(1);
      expect(refused[0]).toContain('at key redis.password');
      expect(gateway.output()).not.toContain(PASSWORD.slice(0, 8));
    } finally {
      await gateway.stop();
    }
  });
});
