// The access log line: its timestamp and durations, and a refusal the gateway decides (502, 503)
// logged as a warning without a stack.
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { KeyStoreUnavailableError, type KeyStore } from '../../src/auth/key-store.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { startPetStore, refusedPort } from '../../support/start-upstream.ts';

const PINO_WARN = 40;
const PINO_INFO = 30;

let gateway: TestGateway | undefined;
let closeUpstream: (() => Promise<void>) | undefined;
afterEach(async () => {
  gateway?.close();
  await closeUpstream?.();
  gateway = undefined;
  closeUpstream = undefined;
});

function accessLine(gatewayUnderTest: TestGateway, requestId: string): Record<string, unknown> {
  const lines = gatewayUnderTest.logs.filter((entry) => entry.reqId === requestId && entry.res !== undefined);
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

describe('access log levels', () => {
  it('logs a 503 (key store unreachable) at warn, with no stack anywhere in the line', async () => {
    const unreachable: KeyStore = {
      findByHash: () => Promise.reject(new KeyStoreUnavailableError('connect ECONNREFUSED 127.0.0.1:6379')),
    };
    const backend = await startPetStore();
    closeUpstream = backend.close;
    gateway = buildTestGateway({ upstreamUrl: backend.baseUrl, keyStore: unreachable });
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`).set('X-Request-Id', 'log-level-503');
    expect(res.status).toBe(503);
    const line = accessLine(gateway, 'log-level-503');
    expect(line).toMatchObject({ level: PINO_WARN, res: { statusCode: 503 }, errorCode: 'service_unavailable' });
    expect(line).not.toHaveProperty('err');
    expect(JSON.stringify(line)).not.toContain('stack');
    expect(JSON.stringify(line)).not.toMatch(/\\n\s+at /);
  });

  it('logs a 502 (backend refuses connections) at warn, with no stack anywhere in the line', async () => {
    gateway = buildTestGateway({ upstreamUrl: `http://127.0.0.1:${await refusedPort()}/v1` });
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`).set('X-Request-Id', 'log-level-502');
    expect(res.status).toBe(502);
    const line = accessLine(gateway, 'log-level-502');
    expect(line).toMatchObject({ level: PINO_WARN, res: { statusCode: 502 }, errorCode: 'bad_gateway' });
    expect(JSON.stringify(line)).not.toContain('stack');
  });

  it('logs a proxied 200 at info', async () => {
    const backend = await startPetStore();
    closeUpstream = backend.close;
    gateway = buildTestGateway({ upstreamUrl: backend.baseUrl });
    await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`).set('X-Request-Id', 'log-level-200');
    expect(accessLine(gateway, 'log-level-200')).toMatchObject({ level: PINO_INFO, res: { statusCode: 200 } });
  });
});

describe('access log fields', () => {
  it('gives the time in whole epoch milliseconds and the durations in milliseconds to the microsecond', async () => {
    const backend = await startPetStore();
    closeUpstream = backend.close;
    gateway = buildTestGateway({ upstreamUrl: backend.baseUrl });
    const before = Date.now();
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`).set('X-Request-Id', 'log-fields-200');
    const after = Date.now();
    expect(res.status).toBe(200);
    const line = accessLine(gateway, 'log-fields-200');
    expect(line.level).toBe(PINO_INFO);
    expect(Number.isInteger(line.time)).toBe(true);
    expect(line.time).toBeGreaterThanOrEqual(before);
    expect(line.time).toBeLessThanOrEqual(after);
    const { responseTime, upstreamMs } = line as { responseTime: number; upstreamMs: number };
    expect(responseTime).toBeGreaterThan(0);
    expect(upstreamMs).toBeGreaterThan(0);
    expect(upstreamMs).toBeLessThanOrEqual(responseTime);
    expect(responseTime).toBe(Number(responseTime.toFixed(3)));
    expect(upstreamMs).toBe(Number(upstreamMs.toFixed(3)));
  });
});

describe('an upstream failure on the access line', () => {
  it("carries the failure kind and what went wrong on the request's one line, with its request id", async () => {
    const port = await refusedPort();
    gateway = buildTestGateway({ upstreamUrl: `http://127.0.0.1:${port}/v1` });
    await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`).set('X-Request-Id', 'log-upstream-down');
    expect(accessLine(gateway, 'log-upstream-down')).toMatchObject({
      reqId: 'log-upstream-down',
      upstreamFailure: 'refused',
      upstreamFailureDetail: { code: 'ECONNREFUSED' },
      upstreamStatus: null,
    });
  });

  it('is logged once: no second line without the request id', async () => {
    gateway = buildTestGateway({ upstreamUrl: `http://127.0.0.1:${await refusedPort()}/v1` });
    await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`).set('X-Request-Id', 'log-upstream-once');
    expect(gateway.logs.filter((entry) => entry.reqId !== 'log-upstream-once')).toEqual([]);
  });

  it("carries the upstream's status when it answered", async () => {
    const backend = await startPetStore();
    closeUpstream = backend.close;
    gateway = buildTestGateway({ upstreamUrl: backend.baseUrl });
    await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`).set('X-Request-Id', 'log-upstream-status');
    expect(accessLine(gateway, 'log-upstream-status')).toMatchObject({ upstreamStatus: 200 });
  });
});
