// Two gateway processes (npm start's entry point) on one Redis: what an operator does reaches both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../helpers/start-redis.ts';
import { startPetStore } from '../helpers/start-upstream.ts';

let redis: PrivateRedis;
let backend: SampleBackend;
let replicas: GatewayProcess[];
let env: Record<string, string>;

beforeAll(async () => {
  redis = await startRedis();
  backend = await startPetStore();
  env = { REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production', API_KEY_PEPPER: 'replicas-test-pepper-0001' };
  replicas = await Promise.all([startGatewayProcess(env), startGatewayProcess(env)]);
  for (const replica of replicas) {
    await waitFor(async () => (await fetch(`http://127.0.0.1:${replica.adminPort}/readyz`)).status === 200);
  }
});
afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await backend.close();
  await redis.stop();
});

async function status(replica: GatewayProcess, key: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${replica.port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

describe('two replicas on one Redis', () => {
  it('both accept a key created with the CLI, and both refuse it within a second of its revocation', async () => {
    const created = await runKeysCli(['create', '--name', 'acme', '--environment', 'production', '--json'], env);
    expect(created.code).toBe(0);
    const { id, key } = JSON.parse(created.stdout) as { id: string; key: string };
    for (const replica of replicas) expect(await status(replica, key)).toBe(200);

    const revokedAt = Date.now();
    const revoked = await runKeysCli(['revoke', id], env);
    expect(revoked.code).toBe(0);
    const cliDoneMs = Date.now() - revokedAt;
    const delays = await Promise.all(replicas.map((replica) => waitFor(async () => (await status(replica, key)) === 401, 1000, 10)));
    for (const delay of delays) expect(delay).toBeLessThan(1000);
    expect(cliDoneMs).toBeGreaterThan(0);
  });

  it("never writes the key to either replica's log", async () => {
    const created = await runKeysCli(['create', '--name', 'logs', '--environment', 'production', '--json'], env);
    const { key } = JSON.parse(created.stdout) as { key: string };
    for (const replica of replicas) await status(replica, key);
    for (const replica of replicas) {
      await waitFor(async () => replica.output().includes('"consumer":"logs"'), 2000);
      expect(replica.output()).not.toContain(key);
      expect(replica.output()).not.toMatch(/psk_(live|test)_/);
    }
  });
});
