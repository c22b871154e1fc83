// The process an operator or a supervisor holds: bin/petstore-gateway is the gateway itself; npm start passes SIGTERM on, and dies of SIGHUP without leaving the gateway behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, waitFor } from '../../support/start-gateway-process.ts';

/** The Node 24 the tests run on: first on PATH, as for an operator who followed CONTRIBUTING.md. */
const NODE_24_BIN = dirname(realpathSync(join(PROJECT_ROOT, 'node_modules/.bin/node')));
const home = mkdtempSync(join(tmpdir(), 'gateway-supervisor-'));
const ENV = {
  PATH: `${NODE_24_BIN}${delimiter}${process.env.PATH ?? ''}`,
  HOME: home,
  npm_config_update_notifier: 'false',
  PORT: '0',
  ADMIN_PORT: '0',
  SHUTDOWN_DRAIN_DELAY_MS: '0',
  LOG_LEVEL: 'info',
  // No Redis is needed to listen, reload and stop.
  REDIS_URL: 'redis://127.0.0.1:1',
};

interface Held {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

const started: Held[] = [];
/** Gateways started under npm, by pid: stopped after each test if a test left one running. */
const gatewayPids: number[] = [];

function hold(command: string, args: string[], env: Record<string, string> = {}): Held {
  const child = spawn(command, args, { cwd: PROJECT_ROOT, env: { ...ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const held = { child, output: () => output, exited: new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))) };
  started.push(held);
  return held;
}

const lineWith = (held: Held, text: string) =>
  held
    .output()
    .split('\n')
    .find((line) => line.includes(text));

async function untilLogged(held: Held, text: string): Promise<string> {
  await waitFor(async () => lineWith(held, text) !== undefined, 20_000);
  return lineWith(held, text)!;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

afterEach(() => {
  for (const held of started.splice(0)) if (held.child.exitCode === null && held.child.signalCode === null) held.child.kill('SIGKILL');
  for (const pid of gatewayPids.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe('bin/petstore-gateway', () => {
  it('is the gateway: SIGHUP to its pid reloads, SIGTERM drains and exits 0', async () => {
    const gateway = hold(join(PROJECT_ROOT, 'bin/petstore-gateway'), []);
    await untilLogged(gateway, '"msg":"gateway listening"');
    gateway.child.kill('SIGHUP');
    expect(JSON.parse(await untilLogged(gateway, '"msg":"configuration reloaded"'))).toMatchObject({ changed: [] });
    gateway.child.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
    expect(gateway.output()).toContain('"msg":"gateway stopped"');
  });
});

describe('npm start', () => {
  /** npm start, and the gateway's pid from its first line about npm. */
  async function npmStart(env: Record<string, string> = {}): Promise<{ npm: Held; gatewayPid: number }> {
    const npm = hold('npm', ['start'], env);
    const { pid, npmPid } = JSON.parse(await untilLogged(npm, '"msg":"run by npm')) as { pid: number; npmPid: number };
    gatewayPids.push(pid);
    expect(npmPid).toBe(npm.child.pid);
    return { npm, gatewayPid: pid };
  }

  it('passes SIGTERM on: the gateway drains and stops, leaving no process behind', async () => {
    // A drain that outlasts npm, which exits as it passes the signal on.
    const { npm, gatewayPid } = await npmStart({ SHUTDOWN_DRAIN_DELAY_MS: '1500' });
    npm.child.kill('SIGTERM');
    await waitFor(async () => !alive(gatewayPid));
    await npm.exited;
    expect(npm.output()).toContain('"reason":"SIGTERM","unanswered":0,"msg":"shutting down: readiness is now false"');
    expect(npm.output()).toContain('"msg":"gateway stopped"');
    // npm's exit, seen during the drain, is not taken for a second reason to stop.
    expect(npm.output()).not.toContain('which ran the gateway, exited');
  });

  it('dies of SIGHUP, and the gateway stops too instead of running on orphaned', async () => {
    const { npm, gatewayPid } = await npmStart();
    npm.child.kill('SIGHUP');
    await npm.exited;
    await waitFor(async () => !alive(gatewayPid));
    expect(npm.output()).toContain(`"msg":"npm (pid ${npm.child.pid}), which ran the gateway, exited: shutting down rather than running on without it"`);
    expect(npm.output()).toContain('"msg":"gateway stopped"');
  });
});
