// With a real Redis refusing writes, the admin API answers 503 and its log lines name the failed command, never its arguments.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { ADMIN_TOKEN, adminRequest, removeTokenFile, tokenFile } from '../helpers/admin-api.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const PEPPER = 'redis-error-logs-test-pepper-0001';
const CONSUMER = 'consumer-named-in-redis-args';
const REFUSED = { code: 'service_unavailable', message: 'Redis did not answer; retry shortly', status: 503 };

let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: RedisGateway;
let file: string;
/** Every line the gateway's own logger (createLogger, as npm start builds it) wrote, as written. */
const lines: string[] = [];
/** A key created while Redis still accepted writes. */
let existing: { id: string; key: string };

beforeAll(async () => {
  redis = await startRedis();
  backend = await startPetStore();
  file = tokenFile(ADMIN_TOKEN);
  const env = {
    PORT: '0',
    ADMIN_PORT: '0',
    REDIS_URL: redis.url,
    UPSTREAM_URL: backend.baseUrl,
    GATEWAY_ENVIRONMENT: 'production',
    ADMIN_API_TOKEN_FILE: file,
  };
  const config = loadConfig(env, { shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 } });
  const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
  gateway = await startRedisGateway(config, { pepper: PEPPER, clock: fixedClock(TEST_NOW), logger });
  const created = await adminRequest(gateway.adminPort, '/admin/keys', { method: 'POST', body: { name: 'written-before' } });
  expect(created.status).toBe(201);
  existing = created.body as { id: string; key: string };
  // A primary that needs a replica to write refuses every write (NOREPLICAS) and still answers reads.
  await redis.client.config('SET', 'min-replicas-to-write', '1');
});
afterAll(async () => {
  await gateway?.close();
  removeTokenFile(file);
  await backend?.close();
  await redis?.stop();
});

/** The error log line of the failed operation answered with `reqId`. */
function failureLine(reqId: string): { line: string; err: Record<string, unknown> } {
  const line = lines.find((entry) => entry.includes('"admin API: the operation failed"') && entry.includes(`"reqId":"${reqId}"`));
  expect(line).toBeDefined();
  return { line: line!, err: (JSON.parse(line!) as { err: Record<string, unknown> }).err };
}

describe('Redis refusing writes', () => {
  it('creating a key: 503, and no log line holds its consumer or its stored hash; the error line names the command', async () => {
    const answer = await adminRequest(gateway.adminPort, '/admin/keys', {
      method: 'POST',
      body: { name: CONSUMER },
      headers: { 'x-request-id': 'refused-create-0001' },
    });
    expect(answer.status).toBe(503);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.body).toEqual(REFUSED);
    const { line, err } = failureLine('refused-create-0001');
    expect(line).not.toContain('"args"');
    // The transaction's EXEC failed; each queued command's refusal is written with its command's name alone.
    expect(err).toMatchObject({ message: 'EXECABORT Transaction discarded because of previous errors.', command: { name: 'exec' } });
    const previous = err.previousErrors as Array<{ message: string; command: Record<string, unknown> }>;
    expect(previous.length).toBeGreaterThan(0);
    for (const refused of previous) {
      expect(refused.message).toBe('NOREPLICAS Not enough good replicas to write.');
      expect(Object.keys(refused.command)).toEqual(['name']);
    }
    expect(previous.map((refused) => refused.command.name)).toContain('hset');
    for (const entry of lines) expect(entry).not.toContain(CONSUMER);
  });

  it('revoking a key: 503, and the error line holds neither its id nor its stored hash', async () => {
    const storedHash = createKeyHasher(PEPPER)(existing.key);
    const answer = await adminRequest(gateway.adminPort, `/admin/keys/${existing.id}`, {
      method: 'DELETE',
      headers: { 'x-request-id': 'refused-revoke-0001' },
    });
    expect(answer.status).toBe(503);
    expect(answer.body).toEqual(REFUSED);
    const { line } = failureLine('refused-revoke-0001');
    expect(line).toContain('NOREPLICAS');
    expect(line).not.toContain('"args"');
    expect(line).not.toContain(existing.id);
    for (const entry of lines) expect(entry).not.toContain(storedHash);
  });
});
