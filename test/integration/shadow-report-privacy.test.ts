// A body keyed by data (a map keyed by e-mail addresses, undeclared in the document) compared in a shadow: its member names reach
// none of the report (admin JSON, Redis keys and values), the log lines or /metrics; the report names `*` in their place.
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedClock } from '../../src/time/clock.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { scaled } from '../../support/time-scale.ts';
import { adminRequest, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';
import { sendRaw, startRecordingUpstream, type RecordingUpstream } from '../helpers/raw-socket.ts';

const PEPPER = 'shadow-report-privacy-pepper-01';
const NOW = Date.parse('2030-03-14T12:30:00Z');
const ADDRESSES = { both: 'ann.lee@example.com', productionOnly: 'bob.kay@example.com', stagingOnly: 'cy.ray@example.com' };

/** getPet's pet, with `owners` (no member the document declares) keyed by e-mail address: the two backends' owners differ. */
function petWithOwners(owners: Record<string, string>) {
  return (_req: unknown, res: ServerResponse) => {
    const text = JSON.stringify({ id: 1, name: 'Rex', categoryId: 2, status: 'available', owners });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) });
    res.end(text);
  };
}

let redis: PrivateRedis;
let production: RecordingUpstream;
let staging: RecordingUpstream;
let gateway: AdminGateway;

beforeAll(async () => {
  redis = await startRedis();
  production = await startRecordingUpstream(petWithOwners({ [ADDRESSES.both]: 'since 2020', [ADDRESSES.productionOnly]: 'since 2021' }));
  staging = await startRecordingUpstream(petWithOwners({ [ADDRESSES.both]: 'since 2022', [ADDRESSES.stagingOnly]: 'since 2021' }));
  gateway = await startAdminGateway({
    redisUrl: redis.url,
    upstreamUrl: production.baseUrl,
    pepper: PEPPER,
    clock: fixedClock(NOW),
    // Counts written to Redis every 100 ms: the admin report reads what Redis holds.
    overrides: { shadow: { sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 0, report: { flushIntervalMs: 100 } } },
  });
});
afterAll(async () => {
  await gateway?.close();
  await staging?.close();
  await production?.close();
  await redis?.stop();
});

/** Every key of the private Redis and what it holds, as text. */
async function redisText(): Promise<string> {
  const keys = await redis.client.keys('*');
  const parts = [...keys];
  for (const key of keys) {
    const type = await redis.client.type(key);
    if (type === 'hash') parts.push(JSON.stringify(await redis.client.hgetall(key)));
    else if (type === 'set') parts.push(...(await redis.client.smembers(key)));
    else if (type === 'string') parts.push((await redis.client.get(key)) ?? '');
    else if (type === 'list') parts.push(...(await redis.client.lrange(key, 0, -1)));
    else if (type === 'zset') parts.push(...(await redis.client.zrange(key, '0', '-1')));
    else if (type === 'stream') parts.push(JSON.stringify(await redis.client.xrange(key, '-', '+')));
  }
  return parts.join('\n');
}

describe('a shadow difference in a body keyed by e-mail addresses', () => {
  it('reaches the report as * pointers, and no address reaches the report, Redis, the log lines or /metrics', async () => {
    const { key } = await gateway.admin.create({ consumer: 'acme', environments: ['production'] });
    const answer = await sendRaw(
      gateway.port,
      `GET /v1/pets/1 HTTP/1.1\r\nHost: gateway.test\r\nX-Request-Id: privacy-1\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`,
      { responses: 1 },
    );
    expect(answer.statuses).toEqual([200]);
    // The client gets production's addresses: the shadow hides them from the report only.
    expect(answer.text).toContain(ADDRESSES.productionOnly);
    const metrics = () => gateway.metrics.registry.metrics();
    await waitFor(async () => (await metrics()).includes('petstore_gateway_shadow_comparisons_total{operation="getPet",result="differ"'), scaled(10_000));
    const bucket = 'petstore-gateway:{shadow}:h:2030-03-14T12:op:getPet';
    await waitFor(async () => (await redis.client.exists(bucket)) === 1, scaled(10_000));

    const report = await adminRequest(gateway.adminPort, '/admin/shadow/report');
    expect(report.status).toBe(200);
    const body = report.body as { operations: Array<{ operation: string; differences: Array<{ pointer: string; kind: string }> }> };
    expect(body.operations.map(({ operation }) => operation)).toEqual(['getPet']);
    expect(body.operations[0]!.differences.map(({ pointer, kind }) => ({ pointer, kind }))).toEqual([
      { pointer: '/*/*', kind: 'extra' },
      { pointer: '/*/*', kind: 'missing' },
      { pointer: '/*/*', kind: 'value' },
    ]);

    const stored = await redisText();
    // The scan is of the report's keys, not of an empty Redis.
    expect(stored).toContain(bucket);
    const places = { report: JSON.stringify(report.body), redis: stored, logs: JSON.stringify(gateway.logs), metrics: await metrics() };
    expect(gateway.logs.length).toBeGreaterThan(0);
    for (const [place, text] of Object.entries(places)) {
      for (const address of Object.values(ADDRESSES)) expect({ place, found: text.includes(address) }).toEqual({ place, found: false });
      // Nor a part of one: the domain, a local part.
      expect({ place, found: text.includes('example.com') }).toEqual({ place, found: false });
    }
  });
});
