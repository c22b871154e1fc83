// A SIGTERM to the gateway's whole process group, as systemd sends it (KillMode=control-group): the request in flight is drained.
import { type ChildProcess, spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { PROJECT_ROOT, waitFor, waitUntilReady } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';

/** How long the backend takes over the request in flight when the signal comes. */
const BACKEND_MS = 1000;
const NODE_24_BIN = dirname(realpathSync(join(PROJECT_ROOT, 'node_modules/.bin/node')));

let redis: PrivateRedis;
let upstreamPort: number;
let asked: (() => void) | undefined;
const slowUpstream = createServer((_req, res: ServerResponse) => {
  asked?.();
  setTimeout(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]'), BACKEND_MS);
});
beforeAll(async () => {
  redis = await startRedis();
  await new Promise<void>((resolve) => slowUpstream.listen(0, '127.0.0.1', resolve));
  upstreamPort = (slowUpstream.address() as AddressInfo).port;
});
afterAll(async () => {
  slowUpstream.closeAllConnections();
  slowUpstream.close();
  await redis.stop();
});

/** Process groups started here: killed after each test if one is left. */
const groups: ChildProcess[] = [];
afterEach(() => {
  for (const child of groups.splice(0)) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
  }
});

const START = {
  'npm start': ['npm', ['start']],
  'bin/petstore-gateway': [join(PROJECT_ROOT, 'bin/petstore-gateway'), []],
} as const;

describe.each(Object.keys(START) as Array<keyof typeof START>)('kill -TERM -- -<pgid> of %s', (how) => {
  it('drains the request in flight (200) and logs the shutdown', async () => {
    const env = {
      PATH: `${NODE_24_BIN}${delimiter}${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? '/tmp',
      npm_config_update_notifier: 'false',
      PORT: '0',
      ADMIN_PORT: '0',
      LOG_LEVEL: 'info',
      REDIS_URL: redis.url,
      UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}/v1`,
      API_KEY_PEPPER: 'group-signal-test-pepper',
      SHUTDOWN_DRAIN_DELAY_MS: '0',
    };
    const { key } = JSON.parse((await runKeysCli(['create', '--name', 'group', '--environment', 'staging', '--json'], env)).stdout) as { key: string };
    const [command, args] = START[how];
    // detached: a process group of its own, led by the child, as a service's under systemd.
    const child = spawn(command, [...args], { cwd: PROJECT_ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    groups.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    await waitFor(async () => output.includes('"msg":"gateway listening"'), 20_000);
    const listening = JSON.parse(output.split('\n').find((line) => line.includes('"msg":"gateway listening"'))!) as { port: number; adminPort: number };
    await waitUntilReady(listening);

    const upstreamAsked = new Promise<void>((resolve) => (asked = resolve));
    const inFlight = fetch(`http://127.0.0.1:${listening.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
    await upstreamAsked;
    process.kill(-child.pid!, 'SIGTERM');
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    await exited;
    // Under npm the gateway may outlive npm by a moment: its last lines come through the same pipe.
    await waitFor(async () => output.includes('"msg":"gateway stopped"'), 5000);
    expect(output).toContain('"msg":"shutting down: readiness is now false"');
    // npm passed the group's signal on: the gateway's second SIGTERM is logged and ignored.
    if (how === 'npm start') expect(output).toContain('"msg":"SIGTERM ignored: the gateway is already draining (SIGKILL ends it at once)"');
  });
});
