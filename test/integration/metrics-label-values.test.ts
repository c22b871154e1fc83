// A consumer name with quotes, backslashes, a newline and control characters, written straight into Redis, reaches /metrics as both formats require and a real Prometheus reads it.
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { OPENMETRICS_CONTENT_TYPE } from '../../src/observability/open-metrics.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startPrometheus, type PrivatePrometheus } from '../helpers/start-prometheus.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { startPetStore } from '../../support/start-upstream.ts';

/** A name written before the admin API refused such names: every character the formats escape or cannot carry. */
const HOSTILE = 'q"b\\s\nl\u0000n\u001b[31me\rc\u007fd\u0085x\u2028y\tz';
/** What a parser reads back: `"`, `\` and the newline as they were, each control character as visible `\uXXXX` text. */
const READ_BACK = 'q"b\\s\nl\\u0000n\\u001b[31me\\u000dc\\u007fd\\u0085x\\u2028y\\u0009z';
/** The label as the exposition writes it (both formats). */
const WRITTEN = 'consumer="q\\"b\\\\s\\nl\\\\u0000n\\\\u001b[31me\\\\u000dc\\\\u007fd\\\\u0085x\\\\u2028y\\\\u0009z"';
/** Every character no exposition line may hold raw (the line feed only ends lines). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this expression's purpose.
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;
const PEPPER = 'metrics-label-values-pepper-0001';
const ACCEPT_TEXT = 'text/plain;version=0.0.4';

let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: RedisGateway;
let keyId: string;
/** The gateway's /metrics as each format, relayed unchanged on a port of its own, for Prometheus to scrape. */
const relays: Record<'text' | 'openmetrics', { server: Server; target: string }> = {} as never;
let prometheus: PrivatePrometheus;

async function scrape(accept: string): Promise<{ type: string | null; body: string }> {
  const res = await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`, { headers: { accept } });
  return { type: res.headers.get('content-type'), body: await res.text() };
}

async function relay(accept: string): Promise<{ server: Server; target: string }> {
  const server = createServer((_req, res) => {
    void scrape(accept).then(({ type, body }) => res.writeHead(200, { 'content-type': type ?? 'text/plain' }).end(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, target: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

beforeAll(async () => {
  redis = await startRedis();
  backend = await startPetStore();
  const env = { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production' };
  gateway = await startRedisGateway(loadConfig(env, { shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 } }), { pepper: PEPPER });
  const { key, record } = await gateway.admin.create({ consumer: 'placeholder', environments: ['production'] });
  keyId = record.id;
  // The name goes into the key's record as a write straight to Redis would have put it, before any request read it.
  const stored = [];
  for (const name of await redis.client.keys('*')) {
    if ((await redis.client.type(name)) === 'hash' && (await redis.client.hget(name, 'id')) === keyId) stored.push(name);
  }
  expect(stored).toHaveLength(1);
  await redis.client.hset(stored[0]!, 'consumer', HOSTILE);
  // getPet is deprecated: its call is counted by consumer.
  const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets/1`, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
  relays.text = await relay(ACCEPT_TEXT);
  relays.openmetrics = await relay(OPENMETRICS_CONTENT_TYPE);
  prometheus = await startPrometheus([relays.text.target, relays.openmetrics.target], 'label-values');
}, 60_000);

afterAll(async () => {
  await prometheus?.stop();
  for (const { server } of Object.values(relays)) await new Promise((resolve) => server.close(resolve));
  await gateway?.close();
  await backend?.close();
  await redis?.stop();
});

describe.each([
  ['the Prometheus text format', ACCEPT_TEXT, 'text/plain; version=0.0.4; charset=utf-8'],
  ['OpenMetrics', OPENMETRICS_CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE],
])('%s', (_format, accept, contentType) => {
  it('writes the label escaped, each control character as visible text, and no raw control character anywhere', async () => {
    const { type, body } = await scrape(accept);
    expect(type).toBe(contentType);
    const line = body.split('\n').find((entry) => entry.startsWith('petstore_gateway_deprecated_requests_total{'));
    expect(line).toBe(`petstore_gateway_deprecated_requests_total{operation="getPet",key_id="${keyId}",${WRITTEN},environment="production"} 1`);
    expect(body).not.toMatch(RAW_CONTROL);
  });
});

describe('a real Prometheus', () => {
  it.each([
    ['the Prometheus text format', 'text'],
    ['OpenMetrics', 'openmetrics'],
  ] as const)('scrapes %s and reads the name back', async (_format, relayed) => {
    const instance = relays[relayed].target;
    const query = `petstore_gateway_deprecated_requests_total{instance="${instance}",operation="getPet"}`;
    await waitFor(async () => (await prometheus.query(query)).length > 0, 20_000, 200);
    const [series] = await prometheus.query(query);
    expect(series!.metric).toMatchObject({ consumer: READ_BACK, key_id: keyId, environment: 'production' });
    const [up] = await prometheus.query(`up{instance="${instance}"}`);
    expect(up!.value[1]).toBe('1');
  });
});

describe('promtool, the text format checker Prometheus ships', () => {
  it('accepts the exposition of a consumer named with every character the format escapes or cannot carry', async () => {
    // The gateway's own metrics only: prom-client's process metrics fail promtool's naming lint on their own.
    const metrics = createMetrics({ environment: 'production', version: 't', sunsets: [], processMetrics: false });
    metrics.deprecatedCall('getPet', 'key_1', HOSTILE);
    const checked = spawnSync('promtool', ['check', 'metrics'], { input: await metrics.registry.metrics(), encoding: 'utf8' });
    expect({ status: checked.status, stdout: checked.stdout, stderr: checked.stderr }).toEqual({ status: 0, stdout: '', stderr: '' });
  });
});
