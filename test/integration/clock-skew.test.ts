// A replica whose clock is off Redis's: the skew exported at every scrape, and said once in the log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import type { Clock } from '../../src/time/clock.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';
import { startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';

const PEPPER = 'clock-skew-test-pepper-0001';
const FIVE_MINUTES_S = 300;

let redis: PrivateRedis;
let backend: SampleBackend;
let gateways: AdminGateway[];
/** Five minutes behind Redis (the machine's clock), moving with it. */
const behind: Clock = { now: () => Date.now() - FIVE_MINUTES_S * 1000 };

async function skew(gateway: AdminGateway): Promise<number | undefined> {
  const series = parseExposition(await (await fetch(`http://127.0.0.1:${gateway.adminPort}/metrics`)).text());
  return series.get(seriesKey('petstore_gateway_redis_clock_skew_seconds', { environment: 'production' }));
}

const skewWarnings = (gateway: AdminGateway) => gateway.logs.filter((line) => String(line.msg).startsWith("this replica's clock differs from Redis's"));

beforeAll(async () => {
  redis = await startRedis();
  backend = await startPetStore();
  const start = (clock: Clock) => startAdminGateway({ redisUrl: redis.url, upstreamUrl: backend.baseUrl, pepper: PEPPER, clock });
  gateways = [await start(behind), await start({ now: () => Date.now() })];
});
afterAll(async () => {
  for (const gateway of gateways ?? []) await gateway.close();
  await backend?.close();
  await redis?.stop();
});

describe("a replica's clock against Redis's", () => {
  it('exports the skew: five minutes for the replica behind, about none for the other', async () => {
    expect(await skew(gateways[0]!)).toBeCloseTo(FIVE_MINUTES_S, -1);
    expect(Math.abs((await skew(gateways[1]!))!)).toBeLessThan(1);
  });

  it('logs it once, however many scrapes read it, with the skew and never for the replica on time', async () => {
    await skew(gateways[0]!);
    await skew(gateways[0]!);
    expect(skewWarnings(gateways[0]!)).toHaveLength(1);
    expect(skewWarnings(gateways[0]!)[0]).toMatchObject({ level: 40, skewSeconds: expect.closeTo(FIVE_MINUTES_S, 0) });
    expect(skewWarnings(gateways[1]!)).toHaveLength(0);
  });

  it('exports no sample while Redis does not answer', async () => {
    await redis.kill();
    try {
      expect(await skew(gateways[1]!)).toBeUndefined();
    } finally {
      await redis.restart();
    }
  });
});
