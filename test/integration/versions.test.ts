// Versions side by side: a second document (test/fixtures/petstore-v2.openapi.yaml) served beside v1 with its own
// validation, upstream, sunset and stability markers.
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildTestGateway, TEST_NOW, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../helpers/raw-socket.ts';

const V2_DOCUMENT = fileURLToPath(new URL('../fixtures/petstore-v2.openapi.yaml', import.meta.url));
const V1_SUNSET = Date.parse('2032-01-01T00:00:00Z');
const V2_SUNSET = Date.parse('2035-06-01T00:00:00Z');

let v1: RecordingUpstream;
let v2: RecordingUpstream;
let gateway: TestGateway;
let retiring: TestGateway;
const opened: TestGateway[] = [];

function v2Version(extra: Record<string, unknown> = {}) {
  const upstream = `http://127.0.0.1:${v2.port}/v2`;
  return { document: V2_DOCUMENT, upstreams: { production: upstream, staging: upstream }, ...extra };
}

function build(options: Parameters<typeof buildTestGateway>[0]): TestGateway {
  const built = buildTestGateway(options);
  opened.push(built);
  return built;
}

beforeAll(async () => {
  v1 = await startRecordingUpstream();
  v2 = await startRecordingUpstream();
  gateway = build({ upstreamUrl: v1.baseUrl, overrides: { versions: [v2Version()] } });
  retiring = build({
    upstreamUrl: v1.baseUrl,
    overrides: {
      versionDeprecation: { deprecatedAt: '2026-11-01T00:00:00Z', sunset: '2032-01-01T00:00:00Z', successor: '/v2' },
      versions: [v2Version({ deprecation: { deprecatedAt: '2026-11-15T00:00:00Z', sunset: '2035-06-01T00:00:00Z' } })],
    },
  });
});
beforeEach(() => {
  for (const each of opened) each.clock.set(TEST_NOW);
  v1.requests.length = 0;
  v2.requests.length = 0;
});
afterAll(async () => {
  await Promise.all(opened.map((each) => each.close()));
  await Promise.all([v1.close(), v2.close()]);
});

function get(app: TestGateway, path: string, key = app.apiKey) {
  return request(app.app).get(path).set('Authorization', `Bearer ${key}`);
}

describe('v2 beside v1', () => {
  it('sends a v2 operation to the v2 upstream, under its base address', async () => {
    const res = await get(gateway, '/v2/animals/7');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(v2.requests.map((each) => `${each.method} ${each.url}`)).toEqual(['GET /v2/animals/7']);
    expect(v1.requests).toEqual([]);
  });

  it('sends a v1 operation to the v1 upstream only', async () => {
    const res = await get(gateway, '/v1/pets');
    expect(res.status).toBe(200);
    expect(v1.requests.map((each) => `${each.method} ${each.url}`)).toEqual(['GET /v1/pets']);
    expect(v2.requests).toEqual([]);
  });

  it('validates a v2 request against the v2 document: animalId above 9999 is refused', async () => {
    const res = await get(gateway, '/v2/animals/10000');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'invalid_request', message: "Path parameter 'animalId' must be <= 9999", status: 400 });
    expect(v2.requests).toEqual([]);
  });

  it('does not apply the v2 bound to v1: getPet 10000 reaches the v1 upstream', async () => {
    const res = await get(gateway, '/v1/pets/10000');
    expect(res.status).toBe(200);
    expect(v1.requests.map((each) => each.url)).toEqual(['/v1/pets/10000']);
  });

  it("serves each document's paths under its own base path only", async () => {
    expect((await get(gateway, '/v2/pets')).status).toBe(404);
    expect((await get(gateway, '/v1/animals/7')).status).toBe(404);
    expect(v1.requests.length + v2.requests.length).toBe(0);
  });

  it('still authenticates first under /v2', async () => {
    const res = await request(gateway.app).get('/v2/animals/7');
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthorized');
  });

  it('counts v2 requests under the v2 operation id', async () => {
    await get(gateway, '/v2/animals/7');
    expect(await gateway.scrape()).toMatch(/petstore_gateway_requests_total\{[^}]*operation="getAnimal"[^}]*status_code="200"[^}]*\} [1-9]/);
  });
});

describe('stability markers', () => {
  it('sends no API-Stability header for a stable operation', async () => {
    const res = await get(gateway, '/v2/animals/7');
    expect(res.headers['api-stability']).toBeUndefined();
  });

  it('serves a beta operation in production with API-Stability: beta', async () => {
    const res = await get(gateway, '/v2/animals');
    expect(res.status).toBe(200);
    expect(res.headers['api-stability']).toBe('beta');
  });

  it('serves an experimental operation in production to a key that opted in, with API-Stability: experimental', async () => {
    const key = gateway.addKey({ id: 'key_opted_in', consumer: 'early-adopter', optedIn: ['experimental'] });
    const res = await get(gateway, '/v2/animals/7/photos', key);
    expect(res.status).toBe(200);
    expect(res.headers['api-stability']).toBe('experimental');
    expect(v2.requests.map((each) => each.url)).toEqual(['/v2/animals/7/photos']);
  });

  it('refuses an experimental operation in production to a key that did not opt in (403), without calling the upstream', async () => {
    const res = await get(gateway, '/v2/animals/7/photos');
    expect(res.status).toBe(403);
    expect(res.headers['api-stability']).toBe('experimental');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      code: 'stability_not_allowed',
      message:
        'GET /v2/animals/{animalId}/photos (listAnimalPhotos) is experimental; in production it is served only to API keys that opted in to experimental operations',
      status: 403,
    });
    expect(v2.requests).toEqual([]);
  });

  it('counts each refusal by operation and marker, from 0', async () => {
    const counting = build({ upstreamUrl: v1.baseUrl, overrides: { versions: [v2Version()] } });
    const refusals = (scraped: string, operation: string, stability: string) =>
      parseExposition(scraped).get(seriesKey('petstore_gateway_stability_refusals_total', { operation, stability, environment: 'production' }));
    const before = await counting.scrape();
    expect(refusals(before, 'listAnimalPhotos', 'experimental')).toBe(0);
    expect(refusals(before, 'listAnimals', 'beta')).toBe(0);
    expect((await get(counting, '/v2/animals/7/photos')).status).toBe(403);
    expect((await get(counting, '/v2/animals')).status).toBe(200);
    const after = await counting.scrape();
    expect(refusals(after, 'listAnimalPhotos', 'experimental')).toBe(1);
    expect(refusals(after, 'listAnimals', 'beta')).toBe(0);
  });

  it('says so on refusals before authentication too', async () => {
    const res = await request(gateway.app).get('/v2/animals/7/photos');
    expect(res.status).toBe(401);
    expect(res.headers['api-stability']).toBe('experimental');
  });

  it('serves experimental operations to every key in staging (the default there)', async () => {
    const staging = build({ upstreamUrl: v1.baseUrl, environment: 'staging', overrides: { versions: [v2Version()] } });
    const res = await get(staging, '/v2/animals/7/photos');
    expect(res.status).toBe(200);
    expect(res.headers['api-stability']).toBe('experimental');
  });

  it('refuses what an environment denies, even to a key that opted in', async () => {
    const denying = build({
      upstreamUrl: v1.baseUrl,
      environment: 'staging',
      overrides: { versions: [v2Version()], stability: { staging: { beta: 'deny' } } },
    });
    const key = denying.addKey({ optedIn: ['experimental', 'beta'] });
    const res = await get(denying, '/v2/animals', key);
    expect(res.status).toBe(403);
    expect(res.headers['api-stability']).toBe('beta');
    expect(res.body).toEqual({
      code: 'stability_not_allowed',
      message: 'GET /v2/animals (listAnimals) is beta and not served in staging',
      status: 403,
    });
    expect((await get(denying, '/v2/animals/7/photos', key)).status).toBe(200);
  });

  it('serves experimental operations to every key in production when config allows them', async () => {
    const allowing = build({ upstreamUrl: v1.baseUrl, overrides: { versions: [v2Version()], stability: { production: { experimental: 'allow' } } } });
    expect((await get(allowing, '/v2/animals/7/photos')).status).toBe(200);
  });
});

describe('a version deprecated as a whole', () => {
  it('announces the v2 deprecation and sunset on every v2 operation, without a successor link when none is set', async () => {
    const res = await get(retiring, '/v2/animals/7');
    expect(res.status).toBe(200);
    expect(res.headers.deprecation).toBe(`@${Date.parse('2026-11-15T00:00:00Z') / 1000}`);
    expect(res.headers.sunset).toBe('Fri, 01 Jun 2035 00:00:00 GMT');
    expect(res.headers.link).toBeUndefined();
  });

  it('announces it on a path the version does not serve too', async () => {
    const res = await get(retiring, '/v2/nothing');
    expect(res.status).toBe(404);
    expect(res.headers.deprecation).toBe(`@${Date.parse('2026-11-15T00:00:00Z') / 1000}`);
  });

  it('still serves v2 one millisecond before its sunset', async () => {
    retiring.clock.set(V2_SUNSET - 1);
    const res = await get(retiring, '/v2/animals/7');
    expect(res.status).toBe(200);
    expect(v2.requests.length).toBe(1);
  });

  it.each([
    ['at its sunset', V2_SUNSET],
    ['one millisecond after', V2_SUNSET + 1],
  ])('refuses every v2 operation with 410 %s, without calling the upstream', async (_when, now) => {
    retiring.clock.set(now);
    const res = await get(retiring, '/v2/animals/7');
    expect(res.status).toBe(410);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.sunset).toBe('Fri, 01 Jun 2035 00:00:00 GMT');
    expect(res.body).toEqual({
      code: 'gone',
      message: 'GET /v2/animals/{animalId} (getAnimal) was removed on 2035-06-01T00:00:00.000Z with version /v2',
      status: 410,
    });
    expect(v2.requests).toEqual([]);
    expect(await retiring.scrape()).toMatch(/petstore_gateway_deprecated_refusals_total\{[^}]*operation="getAnimal"[^}]*reason="sunset"[^}]*\} [1-9]/);
  });

  it('links every v1 operation to its successor version', async () => {
    const res = await get(retiring, '/v1/pets');
    expect(res.status).toBe(200);
    expect(res.headers.deprecation).toBe(`@${Date.parse('2026-11-01T00:00:00Z') / 1000}`);
    expect(res.headers.sunset).toBe('Thu, 01 Jan 2032 00:00:00 GMT');
    expect(res.headers.link).toBe('</v2>; rel="successor-version"');
  });

  it("keeps a deprecated operation's own date and earlier sunset, and links both successors", async () => {
    const res = await get(retiring, '/v1/pets/1');
    expect(res.status).toBe(200);
    expect(res.headers.deprecation).toBe(`@${Date.parse('2026-11-21T00:00:00Z') / 1000}`);
    expect(res.headers.sunset).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(res.headers.link).toBe('</v1/pets>; rel="successor-version", </v2>; rel="successor-version"');
  });

  it('refuses v1 from its sunset on, naming the successor version, while v2 is served', async () => {
    retiring.clock.set(V1_SUNSET);
    const res = await get(retiring, '/v1/pets');
    expect(res.status).toBe(410);
    expect(res.headers.link).toBe('</v2>; rel="successor-version"');
    expect(res.body).toEqual({
      code: 'gone',
      message: 'GET /v1/pets (listPets) was removed on 2032-01-01T00:00:00.000Z with version /v1; use version /v2 instead',
      status: 410,
    });
    expect(v1.requests).toEqual([]);
    expect((await get(retiring, '/v2/animals/7')).status).toBe(200);
  });

  it('leaves v1 unannounced where no version deprecation is configured', async () => {
    const res = await get(gateway, '/v1/pets');
    expect(res.headers.deprecation).toBeUndefined();
    expect(res.headers.link).toBeUndefined();
  });
});
