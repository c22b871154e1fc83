// A rolling restart of two replicas under traffic, behind a readiness-checking balancer, loses no request.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { startGatewayProcess, type GatewayProcess, waitUntilReady } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';

let redis: PrivateRedis;
let backend: SampleBackend;
let env: Record<string, string>;
let key: string;
const started: GatewayProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
  backend = await startPetStore();
  env = {
    REDIS_URL: redis.url,
    UPSTREAM_URL: backend.baseUrl,
    API_KEY_PEPPER: 'rolling-restart-pepper-1',
    // Readiness turns false this long before the listener closes: many of the balancer's check periods, on a slow machine too.
    SHUTDOWN_DRAIN_DELAY_MS: '2000',
  };
  key = (
    JSON.parse((await runKeysCli(['create', '--name', 'rolling', '--environment', 'staging', '--rate-limit-per-minute', '1000000', '--json'], env)).stdout) as {
      key: string;
    }
  ).key;
});
afterAll(async () => {
  await Promise.all(started.map((replica) => replica.stop()));
  await backend.close();
  await redis.stop();
});

async function startReplica(): Promise<GatewayProcess> {
  const replica = await startGatewayProcess(env);
  started.push(replica);
  await waitUntilReady(replica);
  return replica;
}

/** One request on its own connection, so a failure can only mean the gateway dropped it. */
function call(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/pets?limit=5', agent: false, headers: { Authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

it('replaces one replica at a time without losing a request', async () => {
  const pool = new Set<GatewayProcess>([await startReplica(), await startReplica()]);
  const ready = new Set<GatewayProcess>(pool);
  let running = true;

  // The balancer: checks /readyz every 100 ms and sends only to ready replicas, round robin.
  const checker = (async () => {
    while (running) {
      for (const replica of pool) {
        const ok = await fetch(`http://127.0.0.1:${replica.adminPort}/readyz`).then(
          (res) => res.status === 200,
          () => false,
        );
        if (ok) ready.add(replica);
        else ready.delete(replica);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const outcomes = new Map<string, number>();
  let turn = 0;
  const workers = Array.from({ length: 4 }, async () => {
    while (running) {
      const targets = [...ready];
      if (targets.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      const target = targets[turn++ % targets.length]!;
      const outcome = await call(target.port).then(String, (error: Error) => `error: ${error.message}`);
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
  });

  await new Promise((resolve) => setTimeout(resolve, 500));
  const exits: Array<number | null> = [];
  for (const old of [...pool]) {
    exits.push(await old.stop('SIGTERM'));
    pool.delete(old);
    ready.delete(old);
    pool.add(await startReplica());
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  running = false;
  await Promise.all([...workers, checker]);

  expect(exits).toEqual([0, 0]);
  expect([...outcomes.keys()]).toEqual(['200']);
  expect(outcomes.get('200')).toBeGreaterThan(50);
}, 60_000);
