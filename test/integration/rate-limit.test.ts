// Per-key rate limits in one process: headers, 429 refusals, per-operation defaults and per-key overrides.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import type { TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { startPetStoreGateway, type PetStoreGateway } from '../helpers/start-pet-store-gateway.ts';

let backend: SampleBackend;
let gateway: TestGateway;
let petStore: PetStoreGateway;

beforeAll(async () => {
  petStore = await startPetStoreGateway({
    overrides: { rateLimit: { windowMs: 60_000, limits: { production: { default: 3, createPet: 1 }, staging: { default: 3 } } } },
  });
  ({ backend, gateway } = petStore);
});
afterAll(() => petStore.close());

const list = (key: string) => request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${key}`);
const create = (key: string) => request(gateway.app).post('/v1/pets').set('Authorization', `Bearer ${key}`).send({ name: 'Rex', categoryId: 1 });

describe('rate limits per key and operation', () => {
  it('tell allowed requests their quota in the IETF RateLimit fields', async () => {
    const key = gateway.addKey();
    const res = await list(key);
    expect(res.status).toBe(200);
    // pk: the partition key, a hash of key id and operation (never the API key).
    expect(res.headers['ratelimit-policy']).toMatch(/^"listPets"; q=3; w=60; pk=:[A-Za-z0-9+/]+=*:$/);
    expect(res.headers.ratelimit).toBe('"listPets"; r=2; t=60');
  });

  it('refuse the request past the limit with 429, Retry-After and an Error body', async () => {
    const key = gateway.addKey();
    for (let i = 0; i < 3; i++) expect((await list(key)).status).toBe(200);
    const before = backend.received.length;
    const res = await list(key);
    expect(res.status).toBe(429);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['retry-after']).toBe('60');
    expect(res.headers.ratelimit).toBe('"listPets"; r=0; t=60');
    expect(res.body).toEqual({ code: 'rate_limited', message: 'Rate limit for listPets exceeded; retry after the time in Retry-After', status: 429 });
    expect(backend.received.length).toBe(before);
  });

  it('count each operation apart, createPet stricter than listPets', async () => {
    const key = gateway.addKey();
    expect((await create(key)).status).toBe(201);
    expect((await create(key)).status).toBe(429);
    expect((await list(key)).status).toBe(200);
  });

  it('count each key apart', async () => {
    const first = gateway.addKey();
    const second = gateway.addKey();
    for (let i = 0; i < 3; i++) await list(first);
    expect((await list(first)).status).toBe(429);
    expect((await list(second)).status).toBe(200);
  });

  it("apply a key's own per-minute limit instead of the defaults", async () => {
    const key = gateway.addKey({ rateLimitPerMinute: 5 });
    for (let i = 0; i < 5; i++) expect((await list(key)).status).toBe(200);
    expect((await list(key)).status).toBe(429);
    const created = await create(key);
    expect(created.status).toBe(201);
    expect(created.headers['ratelimit-policy']).toMatch(/^"createPet"; q=5; w=60; /);
  });

  it('never let unauthenticated requests consume a quota', async () => {
    for (let i = 0; i < 10; i++) expect((await request(gateway.app).get('/v1/pets')).status).toBe(401);
    const key = gateway.addKey();
    expect((await list(key)).headers.ratelimit).toBe('"listPets"; r=2; t=60');
  });

  it('count refusals per operation', async () => {
    const series = parseExposition(await gateway.scrape());
    expect(series.get(seriesKey('petstore_gateway_rate_limited_total', { operation: 'listPets', environment: 'production' }))).toBe(3);
    expect(series.get(seriesKey('petstore_gateway_rate_limited_total', { operation: 'createPet', environment: 'production' }))).toBe(1);
  });
});
