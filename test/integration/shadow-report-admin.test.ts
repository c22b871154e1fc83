// GET /admin/shadow/report on two production-wired replicas: the same report across replicas, the range asked, refusals as Error bodies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { createRedisShadowReport, type ShadowReport } from '../../src/shadow/report-store.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';
import { adminRequest, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';

const PEPPER = 'shadow-report-admin-pepper-01';
const NOW = Date.parse('2030-03-14T12:30:00Z');
const HOUR = 3_600_000;
const clock = fixedClock(NOW);

let redis: PrivateRedis;
let backend: SampleBackend;
let replicas: AdminGateway[];
let writers: ShadowReport[];

beforeAll(async () => {
  redis = await startRedis();
  backend = await startPetStore();
  const start = () =>
    startAdminGateway({ redisUrl: redis.url, upstreamUrl: backend.baseUrl, pepper: PEPPER, clock, overrides: { shadow: { report: { retentionDays: 7 } } } });
  replicas = [await start(), await start()];
  // Two replicas' comparisons, as their shadow senders record them (the gateway's own prefix).
  writers = [0, 1].map(() => createRedisShadowReport(redis.client, { keyPrefix: 'petstore-gateway:', clock, retentionDays: 7, flushIntervalMs: HOUR }));
  const [a, b] = writers as [ShadowReport, ShadowReport];
  a.record({ operation: 'getPetById', result: 'differ', differences: [{ pointer: '/status', kind: 'status' }], noise: [], at: NOW - 2 * HOUR });
  b.record({ operation: 'getPetById', result: 'differ', differences: [{ pointer: '/status', kind: 'status' }], noise: [], at: NOW - HOUR });
  b.record({ operation: 'getPetById', result: 'match', differences: [], noise: [{ pointer: '/requestedAt', kind: 'value' }], at: NOW - HOUR });
  b.noteNoise({ operation: 'getPetById', pointer: '/requestedAt', kind: 'value', at: NOW - HOUR });
  a.record({ operation: 'listPets', result: 'staging_off_contract', differences: [], noise: [], at: NOW - 10 * 60_000 });
  // A day and an hour ago: outside the default range.
  a.record({ operation: 'listPets', result: 'match', differences: [], noise: [], at: NOW - 25 * HOUR });
  for (const writer of writers) await writer.close();
});
afterAll(async () => {
  for (const replica of replicas ?? []) await replica.close();
  await backend?.close();
  await redis?.stop();
});

const report = (replica: AdminGateway, query = '') => adminRequest(replica.adminPort, `/admin/shadow/report${query}`);
const refusal = (message: string) => ({ code: 'invalid_request', message, status: 400 });

describe('GET /admin/shadow/report', () => {
  it('answers every replica’s comparisons of the last day, the same on each replica', async () => {
    const [first, second] = [await report(replicas[0]!), await report(replicas[1]!)];
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(first.body).toEqual({
      from: '2030-03-13T12:00:00.000Z',
      to: '2030-03-14T13:00:00.000Z',
      operations: [
        {
          operation: 'getPetById',
          results: { match: 1, differ: 2, staging_error: 0, staging_off_contract: 0, skipped: 0 },
          comparisons: 3,
          differences: [{ pointer: '/status', kind: 'status', count: 2, firstSeen: '2030-03-14T10:30:00.000Z', lastSeen: '2030-03-14T11:30:00.000Z' }],
          noise: [{ pointer: '/requestedAt', kind: 'value', count: 1, firstSeen: '2030-03-14T11:30:00.000Z', lastSeen: '2030-03-14T11:30:00.000Z' }],
          learntNoise: [{ pointer: '/requestedAt', kind: 'value', sightings: 1, firstSeen: '2030-03-14T11:30:00.000Z', lastSeen: '2030-03-14T11:30:00.000Z' }],
          unlisted: 0,
        },
        {
          operation: 'listPets',
          results: { match: 0, differ: 0, staging_error: 0, staging_off_contract: 1, skipped: 0 },
          comparisons: 1,
          differences: [],
          noise: [],
          learntNoise: [],
          unlisted: 0,
        },
      ],
    });
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
  });

  it('reads the hours from/to select, days included whole, of one operation when asked', async () => {
    const answer = await report(replicas[1]!, '?from=2030-03-13&to=2030-03-13&operation=listPets');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      from: '2030-03-13T00:00:00.000Z',
      to: '2030-03-14T00:00:00.000Z',
      operations: [
        {
          operation: 'listPets',
          results: { match: 1, differ: 0, staging_error: 0, staging_off_contract: 0, skipped: 0 },
          comparisons: 1,
          differences: [],
          noise: [],
          learntNoise: [],
          unlisted: 0,
        },
      ],
    });
    const hour = await report(replicas[0]!, '?from=2030-03-14T10:59:59Z&to=2030-03-14T12:00:00%2B01:00');
    expect(
      (hour.body as { from: string; to: string; operations: Array<{ results: { differ: number } }> }).operations.map((operation) => operation.results.differ),
    ).toEqual([1]);
  });

  it('refuses a day the calendar lacks, with an Error body', async () => {
    const answer = await report(replicas[0]!, '?from=2030-02-30');
    expect([answer.status, answer.headers['content-type'], answer.body]).toEqual([
      400,
      'application/json; charset=utf-8',
      refusal("Query parameter 'from' must be an RFC 3339 date-time (2026-11-28T09:00:00Z) or a UTC day (2026-11-28)"),
    ]);
  });

  it('refuses from not before to', async () => {
    const answer = await report(replicas[0]!, '?from=2030-03-14T12:00:00Z&to=2030-03-14T12:00:00Z');
    expect([answer.status, answer.body]).toEqual([400, refusal("Query parameter 'from' must be before 'to'")]);
  });

  it('refuses a range longer than the days kept', async () => {
    const answer = await report(replicas[0]!, '?from=2030-03-01&to=2030-03-14');
    expect([answer.status, answer.body]).toEqual([400, refusal('The range may span at most 7 days (shadow.report.retentionDays): older hours are not kept')]);
  });

  it('refuses a caller without the admin token', async () => {
    const answer = await adminRequest(replicas[0]!.adminPort, '/admin/shadow/report', { token: null, from: '127.0.0.7' });
    expect(answer.status).toBe(401);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect((answer.body as { code: string; status: number }).code).toBe('unauthorized');
    expect((answer.body as { code: string; status: number }).status).toBe(401);
  });
});
