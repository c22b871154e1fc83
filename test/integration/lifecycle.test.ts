// Start-up and shutdown of the real gateway process: bad config stops it, SIGTERM drains it.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { startGatewayProcess, waitFor, PROJECT_ROOT, START_ARGS, waitUntilReady } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { execFile } from 'node:child_process';

let redis: PrivateRedis;
let upstreamPort: number;
let releaseSlow: (() => void) | undefined;
const slowUpstream = createServer((req: IncomingMessage, res: ServerResponse) => {
  const answer = () => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]');
  if (req.url?.includes('limit=99')) releaseSlow = answer;
  else answer();
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

describe('start-up', () => {
  it('stops with a message naming the key when a setting is invalid', async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [...START_ARGS],
        { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', UPSTREAM_TIMEOUT_MS: 'soon' } },
        (error, _stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stderr }),
      );
    });
    expect(result.code).toBe(1);
    // One line, blaming the variable rather than config/gateway.yaml, saying what it must be.
    expect(result.stderr).toBe(
      'petstore-gateway: could not start: invalid environment variable UPSTREAM_TIMEOUT_MS (upstream.timeoutMs): must be a whole number of milliseconds, at least 1\n',
    );
  });

  it('starts without Redis, alive but not ready, and becomes ready when Redis appears', async () => {
    const late = await startRedis();
    await late.kill();
    const gateway = await startGatewayProcess({ REDIS_URL: late.url, UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}/v1` });
    try {
      expect((await fetch(`http://127.0.0.1:${gateway.adminPort}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`)).status).toBe(503);
      await late.restart();
      await waitUntilReady(gateway);
    } finally {
      await gateway.stop();
      await late.stop();
    }
  });
});

describe('SIGTERM', () => {
  it('turns readiness false, lets the in-flight request finish, and exits 0', async () => {
    const env = {
      REDIS_URL: redis.url,
      UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}/v1`,
      API_KEY_PEPPER: 'lifecycle-test-pepper-01',
      SHUTDOWN_DRAIN_DELAY_MS: '300',
    };
    const created = await runKeysCli(['create', '--name', 'lifecycle', '--environment', 'staging', '--json'], env);
    const { key } = JSON.parse(created.stdout) as { key: string };
    const gateway = await startGatewayProcess(env);
    await waitUntilReady(gateway);

    const inFlight = fetch(`http://127.0.0.1:${gateway.port}/v1/pets?limit=99`, { headers: { Authorization: `Bearer ${key}` } });
    await waitFor(async () => releaseSlow !== undefined);
    const exit = gateway.stop('SIGTERM');
    await waitFor(async () => (await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`)).status === 503, 2000, 10);
    releaseSlow!();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    expect(await exit).toBe(0);
    expect(gateway.output()).toContain('"msg":"gateway stopped"');
  });
});
