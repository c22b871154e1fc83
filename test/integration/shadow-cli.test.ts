// `npm run shadow -- report` against a real Redis and through a gateway's admin API: the report as a table and as JSON, its refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { createRedisShadowReport } from '../../src/shadow/report-store.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { refusedPort, startPetStore } from '../../support/start-upstream.ts';
import { ADMIN_TOKEN, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';
import { runCli } from '../helpers/run-keys-cli.ts';

const AT = Date.parse('2030-03-14T10:20:00Z');
const clock = fixedClock(AT);

let redis: PrivateRedis;
let backend: SampleBackend;
let gateway: AdminGateway;
/** A Redis address nothing listens on. */
let nowhere: string;

const shadow = (args: readonly string[], env: Record<string, string> = {}) => runCli('src/cli/shadow.ts', args, { REDIS_URL: redis.url, ...env });

const REPORT = {
  from: '2030-03-14T00:00:00.000Z',
  to: '2030-03-15T00:00:00.000Z',
  operations: [
    {
      operation: 'getPetById',
      results: { match: 2, differ: 2, staging_error: 0, staging_off_contract: 0, skipped: 1 },
      comparisons: 4,
      differences: [
        { pointer: '/status', kind: 'status', count: 2, firstSeen: '2030-03-14T10:20:00.000Z', lastSeen: '2030-03-14T10:20:01.000Z' },
        { pointer: '/nickname', kind: 'extra', count: 1, firstSeen: '2030-03-14T10:20:01.000Z', lastSeen: '2030-03-14T10:20:01.000Z' },
      ],
      noise: [{ pointer: '/requestedAt', kind: 'value', count: 2, firstSeen: '2030-03-14T10:20:02.000Z', lastSeen: '2030-03-14T10:20:03.000Z' }],
      learntNoise: [{ pointer: '/requestedAt', kind: 'value', sightings: 1, firstSeen: '2030-03-14T10:20:02.000Z', lastSeen: '2030-03-14T10:20:02.000Z' }],
      unlisted: 0,
    },
  ],
};

beforeAll(async () => {
  redis = await startRedis();
  nowhere = `redis://127.0.0.1:${await refusedPort()}`;
  backend = await startPetStore();
  gateway = await startAdminGateway({ redisUrl: redis.url, upstreamUrl: backend.baseUrl, pepper: 'shadow-cli-test-pepper-0001', clock });
  const report = createRedisShadowReport(redis.client, { keyPrefix: 'petstore-gateway:', clock, retentionDays: 30, flushIntervalMs: 60_000 });
  const noise = [{ pointer: '/requestedAt', kind: 'value' as const }];
  report.record({ operation: 'getPetById', result: 'differ', differences: [{ pointer: '/status', kind: 'status' }], noise: [], at: AT });
  report.record({
    operation: 'getPetById',
    result: 'differ',
    differences: [
      { pointer: '/status', kind: 'status' },
      { pointer: '/nickname', kind: 'extra' },
    ],
    noise: [],
    at: AT + 1000,
  });
  report.record({ operation: 'getPetById', result: 'match', differences: [], noise, at: AT + 2000 });
  report.record({ operation: 'getPetById', result: 'match', differences: [], noise, at: AT + 3000 });
  report.record({ operation: 'getPetById', result: 'skipped', differences: [], noise: [], at: AT + 4000 });
  report.noteNoise({ operation: 'getPetById', pointer: '/requestedAt', kind: 'value', at: AT + 2000 });
  await report.close();
});
afterAll(async () => {
  await gateway?.close();
  await backend?.close();
  await redis?.stop();
});

describe('npm run shadow -- report', () => {
  it('prints the report from Redis as JSON, as the admin API answers it', async () => {
    const printed = await shadow(['report', '--from', '2030-03-14', '--to', '2030-03-14', '--json']);
    expect([printed.code, printed.stderr]).toEqual([0, '']);
    expect(JSON.parse(printed.stdout)).toEqual(REPORT);
  });

  it('prints a table for people by default', async () => {
    const printed = await shadow(['report', '--from', '2030-03-14', '--to', '2030-03-14', '--operation', 'getPetById']);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toBe(
      [
        'shadow report from 2030-03-14T00:00:00.000Z to 2030-03-15T00:00:00.000Z',
        '',
        'getPetById: 4 compared (50.0% differ): match 2, differ 2, staging_error 0, staging_off_contract 0; skipped 1',
        '  differences:',
        '    POINTER    KIND    COUNT  FIRST SEEN                LAST SEEN',
        '    /status    status      2  2030-03-14T10:20:00.000Z  2030-03-14T10:20:01.000Z',
        '    /nickname  extra       1  2030-03-14T10:20:01.000Z  2030-03-14T10:20:01.000Z',
        '  noise:',
        '    POINTER       KIND   COUNT  FIRST SEEN                LAST SEEN',
        '    /requestedAt  value      2  2030-03-14T10:20:02.000Z  2030-03-14T10:20:03.000Z',
        '  learnt as noise: /requestedAt value (1 sightings)',
        '',
      ].join('\n'),
    );
  });

  it('says so when nothing was shadowed in the range', async () => {
    const printed = await shadow(['report', '--from', '2030-03-10', '--to', '2030-03-10']);
    expect([printed.code, printed.stdout]).toEqual([
      0,
      'shadow report from 2030-03-10T00:00:00.000Z to 2030-03-11T00:00:00.000Z\nno shadowed request in this range\n',
    ]);
  });

  it('prints the same report through a gateway’s admin API', async () => {
    const printed = await shadow(['--admin-url', `http://127.0.0.1:${gateway.adminPort}`, 'report', '--from', '2030-03-14', '--to', '2030-03-14', '--json'], {
      REDIS_URL: nowhere,
      ADMIN_API_TOKEN: ADMIN_TOKEN,
    });
    expect([printed.code, printed.stderr]).toEqual([0, '']);
    expect(JSON.parse(printed.stdout)).toEqual(REPORT);
  });

  it('refuses a range backwards as a usage error (exit 2), before Redis is asked', async () => {
    const printed = await shadow(['report', '--from', '2030-03-14', '--to', '2030-03-13'], { REDIS_URL: nowhere });
    expect(printed.code).toBe(2);
    expect(printed.stderr.split('\n')[0]).toBe('shadow: error: --from must be before --to');
  });

  it('passes the admin API’s refusal on (exit 1)', async () => {
    const printed = await shadow(['--admin-url', `http://127.0.0.1:${gateway.adminPort}`, 'report', '--from', '2030-01-01', '--to', '2030-03-14'], {
      ADMIN_API_TOKEN: ADMIN_TOKEN,
    });
    expect([printed.code, printed.stderr]).toEqual([
      1,
      'shadow: the admin API refused: The range may span at most 30 days (shadow.report.retentionDays): older hours are not kept (400 invalid_request)\n',
    ]);
  });

  it('fails with exit 1 naming where it looked when Redis does not answer', async () => {
    const printed = await shadow(['report'], { REDIS_URL: nowhere });
    expect(printed.code).toBe(1);
    expect(printed.stderr).toMatch(new RegExp(`^shadow: Redis at ${nowhere.replaceAll('.', '\\.')} is unreachable `));
  });
});
