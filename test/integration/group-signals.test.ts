// A SIGTERM to the gateway's whole process group, as systemd sends it (KillMode=control-group): the request in flight is drained,
// also under a flood of clients that never read.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { scaled } from '../../support/time-scale.ts';
import {
  type GatewayGroup,
  groupEnvironment,
  killGatewayGroups,
  repeatIgnored,
  SHUTTING_DOWN,
  START,
  type StartedBy,
  STOPPED,
  startGatewayGroup,
} from '../helpers/gateway-group.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { PROJECT_ROOT, waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';

const SIGTERM_IGNORED = repeatIgnored('SIGTERM');

let redis: PrivateRedis;
let upstreamPort: number;
/** Told of each request the backend gets, with the answer to send when the test lets the request finish. */
let asked: ((answer: () => void) => void) | undefined;
const slowUpstream = createServer((_req, res: ServerResponse) => {
  asked?.(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]'));
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

/** The floods' clients, and the process groups started here: killed after each test if one is left. */
const floods: ChildProcess[] = [];
afterEach(async () => {
  for (const flood of floods.splice(0)) flood.kill('SIGKILL');
  await killGatewayGroups();
});

/** Under load: never-reading connections with a small receive window, each pipelining the document, and the grace period the drain gets. */
const FLOOD = 200;
const GRACE_PERIOD_MS = 3000;

/** Starts the gateway as `how` does, with a key of its own, in a process group of its own led by the child. */
async function startGroup(how: StartedBy, extraEnv: Record<string, string> = {}): Promise<GatewayGroup & { key: string }> {
  const env = {
    REDIS_URL: redis.url,
    UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}/v1`,
    API_KEY_PEPPER: 'group-signal-test-pepper',
    ...extraEnv,
  };
  const { key } = JSON.parse((await runKeysCli(['create', '--name', 'group', '--environment', 'staging', '--json'], groupEnvironment(env))).stdout) as {
    key: string;
  };
  return { ...(await startGatewayGroup(how, env)), key };
}

/**
 * Sends SIGTERM to the group while a keyed request waits on the backend, then once more to the gateway during the
 * drain, and lets the backend answer once that repeat is logged; returns that request's answer.
 *
 * Under npm the group's SIGTERM reaches the gateway twice, from the kernel and passed on by npm, but the second
 * delivery is not guaranteed: a standard signal is not queued, and npm's kill() (a fraction of a millisecond
 * later) merges with the first while that is still pending. The repeat sent here, after the drain has begun, is.
 */
async function signalDuringRequest(started: GatewayGroup & { key: string }): Promise<Response> {
  let answer: (() => void) | undefined;
  const upstreamAsked = new Promise<void>(
    (resolve) =>
      (asked = (send) => {
        answer = send;
        resolve();
      }),
  );
  const inFlight = fetch(`http://127.0.0.1:${started.port}/v1/pets`, { headers: { Authorization: `Bearer ${started.key}` } });
  await upstreamAsked;
  process.kill(-started.leader.pid!, 'SIGTERM');
  await waitFor(async () => started.output().includes(SHUTTING_DOWN), 5000);
  process.kill(started.gatewayPid, 'SIGTERM');
  await waitFor(async () => started.output().includes(SIGTERM_IGNORED), 5000);
  answer!();
  return inFlight;
}

async function expectDrainedAndLogged(started: GatewayGroup, res: Response): Promise<void> {
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual([]);
  await started.exited;
  // Under npm the gateway may outlive npm by a moment: its last lines come through the same pipe.
  await waitFor(async () => started.output().includes(STOPPED), 5000);
  expect(started.output()).toContain(SHUTTING_DOWN);
  // The repeated SIGTERM during the drain was logged and ignored: the drain went on to answer the request.
  expect(started.output()).toContain(SIGTERM_IGNORED);
}

describe.each(Object.keys(START) as StartedBy[])('kill -TERM -- -<pgid> of %s', (how) => {
  it('drains the request in flight (200) and logs the shutdown', async () => {
    const started = await startGroup(how);
    await expectDrainedAndLogged(started, await signalDuringRequest(started));
  });

  it(`under ${FLOOD} never-reading connections, drains the request in flight and ends within the grace period`, async () => {
    const started = await startGroup(how, { SHUTDOWN_GRACE_PERIOD_MS: String(GRACE_PERIOD_MS) });
    const flood = spawn('python3', [join(PROJECT_ROOT, 'test/helpers/small-window-clients.py'), '127.0.0.1', String(started.port), String(FLOOD), '4096'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    floods.push(flood);
    flood.stdin.end('GET /v1/openapi.json HTTP/1.1\r\nHost: gw.example\r\n\r\n'.repeat(16));
    await new Promise<void>((resolve, reject) => {
      flood.stdout.once('data', () => resolve());
      flood.once('exit', (code) => reject(new Error(`the flood's clients exited with ${code}`)));
    });
    const signalled = performance.now();
    const res = await signalDuringRequest(started);
    await expectDrainedAndLogged(started, res);
    // The flood's answers wait on clients that never read: the drain cannot finish them, the grace period ends it.
    expect(performance.now() - signalled).toBeLessThan(GRACE_PERIOD_MS + scaled(3000));
  });
});
