// Usage per consumer across two gateways on one real Redis: the same counts from either, by day or month, as JSON or CSV.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import type { PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';
import { ADMIN_TOKEN, adminRequest, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { rawRequest } from '../helpers/raw-request.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { startStoreRedis, type StoreRedis } from '../helpers/start-store-redis.ts';

const PEPPER = 'usage-test-pepper-00001';
const DAY_ONE = Date.parse('2030-03-14T10:00:00Z');
const DAY_TWO = Date.parse('2030-03-15T10:00:00Z');
const clock = fixedClock(DAY_ONE);

let storeRedis: StoreRedis | undefined;
let redis: PrivateRedis;
let backend: SampleBackend;
let replicas: AdminGateway[];
let quotaKey: { id: string; key: string };
let limitedKey: { id: string; key: string };
/** Each replica's near-limit gauges while day one was the current day. */
let nearLimitOnDayOne: Array<{ day: number | undefined; month: number | undefined }>;

async function nearLimitGauges(replica: AdminGateway) {
  const series = parseExposition(await (await fetch(`http://127.0.0.1:${replica.adminPort}/metrics`)).text());
  const gauge = (period: string) => series.get(seriesKey('petstore_gateway_quota_consumers_near_limit', { period, environment: 'production' }));
  return { day: gauge('day'), month: gauge('month') };
}

async function call(replica: AdminGateway, key: string | null, path = '/v1/pets'): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${replica.port}${path}`, { headers: key === null ? {} : { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

/** The usage rows a replica's admin API answers. */
async function usageFrom(replica: AdminGateway, query: string): Promise<unknown> {
  const answer = await adminRequest(replica.adminPort, `/admin/usage?${query}`);
  expect(answer.status).toBe(200);
  return answer.body;
}

/** Day one's rows, by key id (random: either key may come first) and operation. */
const DAY_ONE_ROWS = () =>
  [
    { period: '2030-03-14', keyId: limitedKey.id, consumer: 'limited, "ltd"', operation: 'getPet', admitted: 1, refusedQuota: 0, refusedRateLimit: 0 },
    { period: '2030-03-14', keyId: limitedKey.id, consumer: 'limited, "ltd"', operation: 'listPets', admitted: 2, refusedQuota: 0, refusedRateLimit: 1 },
    { period: '2030-03-14', keyId: quotaKey.id, consumer: 'partner', operation: 'listPets', admitted: 3, refusedQuota: 2, refusedRateLimit: 0 },
  ].sort((a, b) => a.keyId.localeCompare(b.keyId));

beforeAll(async () => {
  // Redis's clock with the gateways': usage rows are named by the gateway's day, the quota's by Redis's (TIME).
  storeRedis = await startStoreRedis({ at: DAY_ONE });
  redis = storeRedis.redis;
  backend = await startPetStore();
  const start = () =>
    startAdminGateway({ redisUrl: redis.url, upstreamUrl: backend.baseUrl, pepper: PEPPER, clock, overrides: { usage: { flushIntervalMs: 50 } } });
  replicas = [await start(), await start()];
  const admin = replicas[0]!.admin;
  const made = await admin.create({ consumer: 'partner', environments: ['production'], quotaPerDay: 3 });
  quotaKey = { id: made.record.id, key: made.key };
  const limited = await admin.create({ consumer: 'limited, "ltd"', environments: ['production'], rateLimitPerMinute: 2 });
  limitedKey = { id: limited.record.id, key: limited.key };
  // The quota key: 3 admitted, then 2 refused, across both replicas.
  for (let index = 0; index < 5; index++) await call(replicas[index % 2]!, quotaKey.key);
  // The limited key: 2 admitted, 1 refused by the rate limit, 1 getPet; a call without a key is no one's usage.
  for (let index = 0; index < 3; index++) await call(replicas[index % 2]!, limitedKey.key);
  await call(replicas[1]!, limitedKey.key, '/v1/pets/1');
  await call(replicas[0]!, null);
  await waitFor(async () => JSON.stringify(await usageFrom(replicas[0]!, 'from=2030-03-14&to=2030-03-14')) === JSON.stringify(DAY_ONE_ROWS()), 10_000, 50);
  // Each replica's next flush reads the near-limit set both wrote to.
  await waitFor(async () => (await Promise.all(replicas.map(nearLimitGauges))).every((gauges) => gauges.day === 1), 10_000, 50);
  nearLimitOnDayOne = await Promise.all(replicas.map(nearLimitGauges));
  // A call on the next day, its own row.
  clock.set(DAY_TWO);
  storeRedis.setTime(DAY_TWO);
  await call(replicas[1]!, quotaKey.key);
  await waitFor(async () => ((await usageFrom(replicas[0]!, 'from=2030-03-15&to=2030-03-15')) as unknown[]).length === 1, 10_000, 50);
});
afterAll(async () => {
  for (const replica of replicas ?? []) await replica.close();
  await backend?.close();
  await storeRedis?.stop();
});

describe('usage per consumer', () => {
  it('counts each key and operation per day: admitted, refused by the quota, refused by the rate limit', async () => {
    expect(await usageFrom(replicas[0]!, 'from=2030-03-14&to=2030-03-14')).toEqual(DAY_ONE_ROWS());
  });

  it('answers the same counts from either replica', async () => {
    const query = 'from=2030-03-01&to=2030-03-31';
    expect(await usageFrom(replicas[1]!, query)).toEqual(await usageFrom(replicas[0]!, query));
  });

  it("gives one key's days apart", async () => {
    expect(await usageFrom(replicas[1]!, `from=2030-03-14&to=2030-03-15&keyId=${quotaKey.id}`)).toEqual([
      { period: '2030-03-14', keyId: quotaKey.id, consumer: 'partner', operation: 'listPets', admitted: 3, refusedQuota: 2, refusedRateLimit: 0 },
      { period: '2030-03-15', keyId: quotaKey.id, consumer: 'partner', operation: 'listPets', admitted: 1, refusedQuota: 0, refusedRateLimit: 0 },
    ]);
  });

  it('adds the days of a month up by month', async () => {
    expect(await usageFrom(replicas[0]!, `from=2030-03-01&to=2030-03-31&keyId=${quotaKey.id}&granularity=month`)).toEqual([
      { period: '2030-03', keyId: quotaKey.id, consumer: 'partner', operation: 'listPets', admitted: 4, refusedQuota: 2, refusedRateLimit: 0 },
    ]);
  });

  it('answers CSV on Accept: text/csv, its fields quoted as RFC 4180 says', async () => {
    const res = await rawRequest(replicas[0]!.adminPort, {
      method: 'GET',
      path: '/admin/usage?from=2030-03-14&to=2030-03-14',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, accept: 'text/csv' },
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    const limited = [`2030-03-14,${limitedKey.id},"limited, ""ltd""",getPet,1,0,0`, `2030-03-14,${limitedKey.id},"limited, ""ltd""",listPets,2,0,1`];
    const partner = [`2030-03-14,${quotaKey.id},partner,listPets,3,2,0`];
    const rows = limitedKey.id.localeCompare(quotaKey.id) < 0 ? [...limited, ...partner] : [...partner, ...limited];
    expect(res.body).toBe(['period,keyId,consumer,operation,admitted,refusedQuota,refusedRateLimit', ...rows, ''].join('\r\n'));
  });

  it.each([
    ['from=2030-02-30&to=2030-03-01', "Query parameter 'from' is no such day (2030-02-30): give a real UTC day, YYYY-MM-DD"],
    ['from=2030-03-02&to=2030-03-01', "Query parameter 'from' must not be after 'to'"],
    ['from=2020-01-01&to=2030-03-01', 'The range may span at most 400 days (usage.retentionDays): older days are not kept'],
  ])('refuses %s with an Error in JSON, even to a caller asking for CSV', async (query, message) => {
    const answer = await adminRequest(replicas[0]!.adminPort, `/admin/usage?${query}`, { headers: { accept: 'text/csv' } });
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.body).toEqual({ code: 'invalid_request', message, status: 400 });
  });

  it('counts the keys past 80% of a quota, the same on every replica', () => {
    // The quota key used 3 of its 3 calls a day; it has no monthly quota.
    expect(nearLimitOnDayOne).toEqual([
      { day: 1, month: 0 },
      { day: 1, month: 0 },
    ]);
  });

  it('counts the near-limit keys of the current day only: a new day starts at 0', async () => {
    await waitFor(async () => (await nearLimitGauges(replicas[0]!)).day === 0, 10_000, 50);
  });
});

describe('npm run keys -- usage', () => {
  const env = () => ({ REDIS_URL: redis.url, GATEWAY_ENVIRONMENT: 'production' });

  it('prints the rows as JSON, read from Redis', async () => {
    const printed = await runKeysCli(['usage', '--from', '2030-03-14', '--to', '2030-03-14', '--json'], env());
    expect(printed.code).toBe(0);
    expect(JSON.parse(printed.stdout)).toEqual(DAY_ONE_ROWS());
  });

  it("prints the API's CSV through the admin API", async () => {
    const printed = await runKeysCli(
      [
        '--admin-url',
        `http://127.0.0.1:${replicas[1]!.adminPort}`,
        'usage',
        '--from',
        '2030-03-01',
        '--to',
        '2030-03-31',
        '--granularity',
        'month',
        '--key-id',
        quotaKey.id,
        '--csv',
      ],
      { ADMIN_API_TOKEN: ADMIN_TOKEN },
    );
    expect(printed.code).toBe(0);
    expect(printed.stdout).toBe(`period,keyId,consumer,operation,admitted,refusedQuota,refusedRateLimit\r\n2030-03,${quotaKey.id},partner,listPets,4,2,0\r\n`);
  });

  it('prints a table by default', async () => {
    const printed = await runKeysCli(['usage', '--from', '2030-03-15', '--to', '2030-03-15'], env());
    expect(printed.stdout.split('\n')).toEqual([
      expect.stringMatching(/^period +key id +consumer +operation +admitted +refused \(quota\) +refused \(rate limit\)$/),
      expect.stringMatching(new RegExp(`^2030-03-15 +${quotaKey.id} +partner +listPets +1 +0 +0$`)),
      '',
    ]);
  });

  it('refuses a range that is not one as a usage error', async () => {
    const printed = await runKeysCli(['usage', '--from', '2030-03-15', '--to', '2030-03-14'], env());
    expect(printed.code).toBe(2);
    expect(printed.stderr).toContain('keys: error: --from must not be after --to');
    expect(printed.stderr).not.toContain('Query parameter');
  });

  it('says a day the calendar lacks is no such day, in the words of its options', async () => {
    const printed = await runKeysCli(['usage', '--from', '2026-02-30', '--to', '2026-03-01'], env());
    expect(printed.code).toBe(2);
    expect(printed.stderr).toContain('keys: error: --from is no such day (2026-02-30): give a real UTC day, YYYY-MM-DD');
  });
});
