// The versioning policy: getPet announces its deprecation on every response and is gone from the sunset on.
import request from 'supertest';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { buildTestGateway, TEST_NOW, type TestGateway } from '../helpers/build-test-app.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const SUNSET = Date.parse('2030-12-05T00:00:00Z');
const DEPRECATED_AT_SECONDS = Date.parse('2026-11-21T00:00:00Z') / 1000;

let backend: SampleBackend;
let gateway: TestGateway;
let documented: TestGateway;
let auth: string;

beforeAll(async () => {
  backend = await startPetStore();
  gateway = buildTestGateway({ upstreamUrl: backend.baseUrl });
  documented = buildTestGateway({
    upstreamUrl: backend.baseUrl,
    overrides: {
      deprecations: {
        getPet: {
          deprecatedAt: '2026-11-21T00:00:00Z',
          documentationUrl: 'https://docs.example.com/deprecations/get-pet',
          sunsetDocumentationUrl: 'https://docs.example.com/sunsets/get-pet',
        },
      },
    },
  });
  auth = `Bearer ${gateway.apiKey}`;
});
beforeEach(() => gateway.clock.set(TEST_NOW));
afterAll(async () => {
  gateway.close();
  documented.close();
  await backend.close();
});

function getPet(id = '1', app = gateway.app, key = auth) {
  return request(app).get(`/v1/pets/${id}`).set('Authorization', key);
}

describe('getPet before its sunset', () => {
  it('answers from the upstream with Deprecation, Sunset and Link headers', async () => {
    const res = await getPet();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: 1, name: 'Rex', categoryId: 1, status: 'available' });
    expect(res.headers.deprecation).toBe(`@${DEPRECATED_AT_SECONDS}`);
    expect(res.headers.sunset).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(res.headers.link).toBe('</v1/pets>; rel="successor-version"');
  });

  it('adds deprecation and sunset links when their documentation URLs are configured', async () => {
    const res = await getPet('1', documented.app, `Bearer ${documented.apiKey}`);
    expect(res.headers.link).toBe(
      '</v1/pets>; rel="successor-version", ' +
        '<https://docs.example.com/deprecations/get-pet>; rel="deprecation"; type="text/html", ' +
        '<https://docs.example.com/sunsets/get-pet>; rel="sunset"; type="text/html"',
    );
  });

  it("carries the headers on the upstream's 404", async () => {
    const res = await getPet('424242');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: 'not_found', message: 'No pet with id 424242', status: 404 });
    expect(res.headers.deprecation).toBe(`@${DEPRECATED_AT_SECONDS}`);
    expect(res.headers.sunset).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
  });

  it("carries the headers on the gateway's own refusals", async () => {
    const invalid = await getPet('abc');
    expect(invalid.status).toBe(400);
    expect(invalid.headers.deprecation).toBe(`@${DEPRECATED_AT_SECONDS}`);
    const unauthenticated = await request(gateway.app).get('/v1/pets/1');
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.sunset).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
  });

  it('is still served one millisecond before the sunset', async () => {
    gateway.clock.set(SUNSET - 1);
    const res = await getPet();
    expect(res.status).toBe(200);
    expect(res.headers.sunset).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
  });
});

describe('getPet from its sunset on', () => {
  it.each([
    ['at the sunset', SUNSET],
    ['one millisecond after', SUNSET + 1],
    ['years after', Date.parse('2035-01-01T00:00:00Z')],
  ])('is refused with 410 %s, without calling the upstream', async (_when, now) => {
    gateway.clock.set(now);
    const before = backend.received.length;
    const res = await getPet();
    expect(res.status).toBe(410);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.deprecation).toBe(`@${DEPRECATED_AT_SECONDS}`);
    expect(res.headers.sunset).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(res.headers.link).toBe('</v1/pets>; rel="successor-version"');
    expect(res.body).toEqual({
      code: 'gone',
      message: 'GET /v1/pets/{petId} (getPet) was removed on 2030-12-05T00:00:00.000Z; use GET /v1/pets (listPets) instead',
      status: 410,
    });
    expect(backend.received.length).toBe(before);
  });

  it('still authenticates first: an unknown caller gets 401', async () => {
    gateway.clock.set(SUNSET);
    const res = await request(gateway.app).get('/v1/pets/1');
    expect(res.status).toBe(401);
  });

  it('leaves listPets served', async () => {
    gateway.clock.set(SUNSET + 1);
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', auth);
    expect(res.status).toBe(200);
  });
});

describe('operations that are not deprecated', () => {
  it('carry no deprecation headers', async () => {
    const list = await request(gateway.app).get('/v1/pets').set('Authorization', auth);
    const create = await request(gateway.app).post('/v1/pets').set('Authorization', auth).send({ name: 'Tom', categoryId: 1 });
    for (const res of [list, create]) {
      expect(res.headers.deprecation).toBeUndefined();
      expect(res.headers.sunset).toBeUndefined();
      expect(res.headers.link).toBeUndefined();
    }
  });
});
