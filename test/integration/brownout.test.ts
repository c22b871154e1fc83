// Scheduled brownouts: getPet refused with 410 brownout inside a configured window, by the injected clock.
import request from 'supertest';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { buildTestGateway, TEST_NOW, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const START = Date.parse('2027-03-01T14:00:00Z');
const END = Date.parse('2027-03-02T02:00:00Z');
const SUNSET = Date.parse('2030-12-05T00:00:00Z');
const DEPRECATED_AT_SECONDS = Date.parse('2026-11-21T00:00:00Z') / 1000;
const BROWNOUT_MESSAGE =
  'GET /v1/pets/{petId} (getPet) is browned out until 2027-03-02T02:00:00.000Z: it is deprecated and will be removed on 2030-12-05T00:00:00.000Z; ' +
  'use GET /v1/pets (listPets) instead';

let backend: SampleBackend;
let gateway: TestGateway;
let auth: string;

function withWindows(windows: Array<{ start: string; end: string }>): TestGateway {
  return buildTestGateway({
    upstreamUrl: backend.baseUrl,
    overrides: { deprecations: { getPet: { deprecatedAt: '2026-11-21T00:00:00Z', brownouts: windows } } },
  });
}

beforeAll(async () => {
  backend = await startPetStore();
  gateway = withWindows([{ start: '2027-03-01T14:00:00Z', end: '2027-03-02T02:00:00Z' }]);
  auth = `Bearer ${gateway.apiKey}`;
});
beforeEach(() => gateway.clock.set(TEST_NOW));
afterAll(async () => {
  await gateway.close();
  await backend.close();
});

const getPet = (app = gateway.app, key = auth) => request(app).get('/v1/pets/1').set('Authorization', key);

async function series(name: string, labels: Record<string, string>, from = gateway): Promise<number | undefined> {
  return parseExposition(await from.scrape()).get(seriesKey(`petstore_gateway_${name}`, { ...labels, environment: 'production' }));
}

describe('a scheduled brownout window', () => {
  it('leaves getPet served one millisecond before its start', async () => {
    gateway.clock.set(START - 1);
    const res = await getPet();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: 1, name: 'Rex', categoryId: 1, status: 'available' });
  });

  it('refuses getPet at its start with 410 brownout, Retry-After at its end and the deprecation headers, without calling the upstream', async () => {
    gateway.clock.set(START);
    const before = backend.received.length;
    const res = await getPet();
    expect(res.status).toBe(410);
    expect(res.body).toEqual({ code: 'brownout', message: BROWNOUT_MESSAGE, status: 410 });
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['retry-after']).toBe('43200');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.deprecation).toBe(`@${DEPRECATED_AT_SECONDS}`);
    expect(res.headers.sunset).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(res.headers.link).toBe('</v1/pets>; rel="successor-version"');
    expect(backend.received.length).toBe(before);
  });

  it('refuses getPet one millisecond after its start', async () => {
    gateway.clock.set(START + 1);
    const res = await getPet();
    expect(res.status).toBe(410);
    expect(res.body.code).toBe('brownout');
    expect(res.headers['retry-after']).toBe('43200');
  });

  it('refuses getPet one millisecond before its end, with Retry-After: 1', async () => {
    gateway.clock.set(END - 1);
    const res = await getPet();
    expect(res.status).toBe(410);
    expect(res.headers['retry-after']).toBe('1');
  });

  it('serves getPet again at its end', async () => {
    gateway.clock.set(END);
    const res = await getPet();
    expect(res.status).toBe(200);
  });

  it('leaves listPets served', async () => {
    gateway.clock.set(START);
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', auth);
    expect(res.status).toBe(200);
    expect(res.headers.deprecation).toBeUndefined();
  });

  it('still authenticates first: an unknown caller gets 401', async () => {
    gateway.clock.set(START);
    const res = await request(gateway.app).get('/v1/pets/1');
    expect(res.status).toBe(401);
  });

  it('counts each refusal in deprecated_refusals_total{reason="brownout"}', async () => {
    const before = await series('deprecated_refusals_total', { operation: 'getPet', reason: 'brownout' });
    gateway.clock.set(START);
    await getPet();
    await getPet();
    expect(await series('deprecated_refusals_total', { operation: 'getPet', reason: 'brownout' })).toBe(before! + 2);
  });

  it('shows brownout_active at 1 inside the window and 0 outside', async () => {
    gateway.clock.set(START);
    expect(await series('brownout_active', { operation: 'getPet' })).toBe(1);
    gateway.clock.set(END);
    expect(await series('brownout_active', { operation: 'getPet' })).toBe(0);
  });
});

describe('after the sunset', () => {
  it('is gone, not browned out, inside a window that outlasts the sunset', async () => {
    const late = withWindows([{ start: '2030-12-04T00:00:00Z', end: '2030-12-06T00:00:00Z' }]);
    try {
      late.clock.set(SUNSET);
      const res = await getPet(late.app, `Bearer ${late.apiKey}`);
      expect(res.status).toBe(410);
      expect(res.body.code).toBe('gone');
      expect(res.headers['retry-after']).toBeUndefined();
      expect(await series('deprecated_refusals_total', { operation: 'getPet', reason: 'sunset' }, late)).toBe(1);
    } finally {
      await late.close();
    }
  });
});

describe('configuration', () => {
  it('stops start-up for a window on an operation that is not deprecated', () => {
    expect(() =>
      buildTestGateway({
        upstreamUrl: backend.baseUrl,
        overrides: {
          deprecations: { listPets: { deprecatedAt: '2026-11-21T00:00:00Z', brownouts: [{ start: '2027-03-01T14:00:00Z', end: '2027-03-02T02:00:00Z' }] } },
        },
      }),
    ).toThrow(
      'config: deprecations.listPets.brownouts: listPets is not a deprecated operation of the interface document; only deprecated operations can be browned out',
    );
  });
});
