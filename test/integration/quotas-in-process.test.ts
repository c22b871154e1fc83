// Quotas in a gateway without Redis (the embedded default): counted in this process alone, on the gateway's clock.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/build-test-app.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { startPetStoreGateway, type PetStoreGateway } from '../helpers/start-pet-store-gateway.ts';

let gateway: TestGateway;
let petStore: PetStoreGateway;

beforeAll(async () => {
  petStore = await startPetStoreGateway({});
  ({ gateway } = petStore);
});
afterAll(() => petStore.close());

const list = (key: string) => request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${key}`);

/** Seconds from the test clock's now (2026-11-21T12:00Z) to the end of its UTC day. */
const UNTIL_MIDNIGHT = 12 * 3600;

describe('quotas without Redis', () => {
  it('admit the daily quota, then refuse with quota_exceeded until the day ends', async () => {
    const key = gateway.addKey({ quotaPerDay: 2 });
    expect((await list(key)).status).toBe(200);
    expect((await list(key)).status).toBe(200);
    const refused = await list(key);
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(refused.body).toEqual({
      code: 'quota_exceeded',
      message: "The day's quota of 2 requests for this API key is used up; retry after the time in Retry-After",
      status: 429,
    });
    expect(refused.headers['retry-after']).toBe(String(UNTIL_MIDNIGHT));
  });

  it('count every operation of a key against one quota', async () => {
    const key = gateway.addKey({ quotaPerDay: 2 });
    expect((await list(key)).status).toBe(200);
    const pet = await request(gateway.app).get('/v1/pets/1').set('Authorization', `Bearer ${key}`);
    expect(pet.status).not.toBe(429);
    expect((await list(key)).status).toBe(429);
  });

  it('admit again on the next day of the gateway clock', async () => {
    const key = gateway.addKey({ quotaPerDay: 1 });
    expect((await list(key)).status).toBe(200);
    expect((await list(key)).status).toBe(429);
    gateway.clock.set(TEST_NOW + UNTIL_MIDNIGHT * 1000);
    try {
      expect((await list(key)).status).toBe(200);
    } finally {
      gateway.clock.set(TEST_NOW);
    }
  });

  it("keep counting the day's quota across a configuration reload", async () => {
    const key = gateway.addKey({ quotaPerDay: 2 });
    expect((await list(key)).status).toBe(200);
    expect((await gateway.reload()).result).toBe('success');
    expect((await list(key)).status).toBe(200);
    expect((await list(key)).status).toBe(429);
  });

  it('count quota refusals by operation and period', async () => {
    const key = gateway.addKey({ quotaPerMonth: 1 });
    await list(key);
    await list(key);
    const series = parseExposition(await gateway.scrape());
    expect(series.get(seriesKey('petstore_gateway_quota_refused_total', { operation: 'listPets', period: 'month', environment: 'production' }))).toBe(1);
  });

  it('log the refusal with its code', async () => {
    const key = gateway.addKey({ quotaPerDay: 1 });
    await list(key);
    await list(key);
    const line = gateway.logs.findLast((entry) => entry.msg === 'request failed');
    expect(line).toMatchObject({ res: { statusCode: 429 }, errorCode: 'quota_exceeded' });
  });
});
