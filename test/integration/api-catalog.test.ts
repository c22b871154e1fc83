// GET /.well-known/api-catalog: the RFC 9727 catalog of the versions served, answered by the gateway without a key, through the real pipeline.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../src/server/server.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { API_CATALOG_CONTENT_TYPE, linksetProblem } from '../helpers/linkset-schema.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../helpers/raw-socket.ts';

const V2_DOCUMENT = fileURLToPath(new URL('../fixtures/petstore-v2.openapi.yaml', import.meta.url));
const CATALOG = '/.well-known/api-catalog';
const CATALOG_TYPE = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"';
const OPENAPI_JSON = 'application/vnd.oai.openapi+json;version=3.1';
const GET_PET_ANCHOR = '/v1/openapi.json#/paths/~1pets~1%7BpetId%7D/get';
const DEPRECATION_PAGE = 'https://docs.petstore.example.com/deprecations/get-pet';
const SUNSET_PAGE = 'https://docs.petstore.example.com/sunsets/get-pet';

let v1: RecordingUpstream;
let v2: RecordingUpstream;
/** Configured as shipped: v1 alone, nothing deprecated as a whole, getPet without pages. */
let plain: TestGateway;
/** v1 deprecated in favour of v2, v2 deprecated with a sunset, getPet with its two pages. */
let versioned: TestGateway;
const opened: TestGateway[] = [];

function build(overrides: Record<string, unknown> = {}, extra: Partial<Parameters<typeof buildTestGateway>[0]> = {}): TestGateway {
  const built = buildTestGateway({ upstreamUrl: v1.baseUrl, overrides, ...extra });
  opened.push(built);
  return built;
}

function versionedOverrides(): Record<string, unknown> {
  const upstream = `http://127.0.0.1:${v2.port}/v2`;
  return {
    versionDeprecation: { deprecatedAt: '2026-11-01T00:00:00Z', sunset: '2032-01-01T00:00:00Z', successor: '/v2' },
    versions: [
      {
        document: V2_DOCUMENT,
        upstreams: { production: upstream, staging: upstream },
        deprecation: { deprecatedAt: '2026-11-15T00:00:00Z', sunset: '2035-06-01T00:00:00Z' },
      },
    ],
    deprecations: { getPet: { deprecatedAt: '2026-11-21T00:00:00Z', documentationUrl: DEPRECATION_PAGE, sunsetDocumentationUrl: SUNSET_PAGE } },
  };
}

beforeAll(async () => {
  v1 = await startRecordingUpstream();
  v2 = await startRecordingUpstream();
  plain = build();
  versioned = build(versionedOverrides());
});
beforeEach(() => {
  v1.requests.length = 0;
  v2.requests.length = 0;
});
afterAll(async () => {
  await Promise.all(opened.map((each) => each.close()));
  await Promise.all([v1.close(), v2.close()]);
});

const catalogOf = async (gateway: TestGateway) => JSON.parse((await request(gateway.app).get(CATALOG)).text) as { linkset: Array<Record<string, unknown>> };

describe('the catalog as shipped', () => {
  it('answers GET without an API key: 200, the RFC 9727 media type, and a Link to itself', async () => {
    const res = await request(plain.app).get(CATALOG);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(CATALOG_TYPE);
    expect(res.headers.link).toBe('</.well-known/api-catalog>; rel="api-catalog"');
  });

  it("lists v1 with its document, and getPet's replacement, as relative references", async () => {
    const res = await request(plain.app).get(CATALOG);
    expect(res.text).toBe(
      JSON.stringify({
        linkset: [
          { anchor: '/v1', 'service-desc': [{ href: '/v1/openapi.json', type: OPENAPI_JSON }] },
          { anchor: GET_PET_ANCHOR, 'successor-version': [{ href: '/v1/pets' }] },
        ],
      }),
    );
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(res.text)));
  });

  it('answers HEAD with the same head and no body', async () => {
    const get = await request(plain.app).get(CATALOG);
    const head = await request(plain.app).head(CATALOG);
    expect(head.status).toBe(200);
    expect(head.text).toBeUndefined();
    const { date: _getDate, 'x-request-id': _getId, ...getHead } = get.headers;
    const { date: _headDate, 'x-request-id': _headId, ...headHead } = head.headers;
    expect(headHead).toEqual(getHead);
  });

  it('sends nothing to the upstream', async () => {
    await request(plain.app).get(CATALOG);
    await request(plain.app).head(CATALOG);
    expect(v1.requests).toEqual([]);
  });

  it('refuses another method with 405 and Allow, without asking for a key', async () => {
    const res = await request(plain.app).post(CATALOG).send({});
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({ code: 'method_not_allowed', message: 'POST is not allowed here; allowed: GET, HEAD', status: 405 });
    expect(v1.requests).toEqual([]);
  });
});

describe('deprecations in the catalog', () => {
  it('gives a deprecated version deprecation and sunset links to its document, which says when, and its successor', async () => {
    const { linkset } = await catalogOf(versioned);
    const v1Document = [{ href: '/v1/openapi.json', type: OPENAPI_JSON }];
    const v2Document = [{ href: '/v2/openapi.json', type: OPENAPI_JSON }];
    expect(linkset.slice(0, 2)).toEqual([
      { anchor: '/v1', 'service-desc': v1Document, deprecation: v1Document, sunset: v1Document, 'successor-version': [{ href: '/v2' }] },
      { anchor: '/v2', 'service-desc': v2Document, deprecation: v2Document, sunset: v2Document },
    ]);
  });

  it('anchors a deprecated operation at its place in the document, with its configured pages and replacement', async () => {
    const { linkset } = await catalogOf(versioned);
    expect(linkset.slice(2)).toEqual([
      {
        anchor: GET_PET_ANCHOR,
        deprecation: [{ href: DEPRECATION_PAGE, type: 'text/html' }],
        sunset: [{ href: SUNSET_PAGE, type: 'text/html' }],
        'successor-version': [{ href: '/v1/pets' }],
      },
    ]);
  });

  it('lists a version that is current without deprecation links', async () => {
    const current = build({ versions: [{ document: V2_DOCUMENT, upstreams: { production: `${v2.baseUrl}/v2`, staging: `${v2.baseUrl}/v2` } }] });
    const { linkset } = await catalogOf(current);
    expect(linkset[1]).toEqual({ anchor: '/v2', 'service-desc': [{ href: '/v2/openapi.json', type: OPENAPI_JSON }] });
  });
});

describe('the shape RFC 9264 and RFC 9727 give a catalog', () => {
  it.each([
    ['as shipped', () => plain],
    ['with deprecated versions and operation pages', () => versioned],
  ])('holds %s', async (_configuration, gateway) => {
    const res = await request(gateway().app).get(CATALOG);
    expect(res.headers['content-type']).toMatch(API_CATALOG_CONTENT_TYPE);
    expect(linksetProblem(JSON.parse(res.text))).toBeUndefined();
  });

  it('is what the schema refuses when a relation holds one target outside an array', () => {
    expect(linksetProblem({ linkset: [{ anchor: '/v1', 'service-desc': { href: '/v1/openapi.json' } }] })).toBe('data/linkset/0/service-desc must be array');
  });
});

describe('a pipeline generation', () => {
  it('serves the catalog of its own configuration: a reload that gives getPet a page links it', async () => {
    let next: Record<string, unknown> = {};
    const reloading = build({}, { reloadOverrides: () => next });
    const getPetEntry = async () => (await catalogOf(reloading)).linkset.find((entry) => entry.anchor === GET_PET_ANCHOR);
    expect(await getPetEntry()).toEqual({ anchor: GET_PET_ANCHOR, 'successor-version': [{ href: '/v1/pets' }] });
    next = { deprecations: { getPet: { deprecatedAt: '2026-11-21T00:00:00Z', documentationUrl: DEPRECATION_PAGE } } };
    expect(await reloading.reload()).toMatchObject({ result: 'success', needRestart: [] });
    expect(await getPetEntry()).toEqual({
      anchor: GET_PET_ANCHOR,
      deprecation: [{ href: DEPRECATION_PAGE, type: 'text/html' }],
      'successor-version': [{ href: '/v1/pets' }],
    });
  });
});

describe('revalidation', () => {
  it('gives a strong validator of the bytes and asks caches to revalidate', async () => {
    const res = await request(plain.app).get(CATALOG);
    expect(res.headers.etag).toBe(`"${createHash('sha256').update(res.text).digest('base64url')}"`);
    expect(res.headers['cache-control']).toBe('no-cache');
  });

  it('answers If-None-Match naming it with 304: no content, the same validator', async () => {
    const { etag } = (await request(plain.app).get(CATALOG)).headers;
    const res = await request(plain.app)
      .get(CATALOG)
      .set('If-None-Match', `"other", W/${String(etag)}`);
    expect(res.status).toBe(304);
    expect(res.text).toBe('');
    expect([res.headers.etag, res.headers['cache-control'], res.headers.link, res.headers['content-type']]).toEqual([
      etag,
      'no-cache',
      '</.well-known/api-catalog>; rel="api-catalog"',
      undefined,
    ]);
  });

  it('answers 200 to a validator a reload made stale', async () => {
    let next: Record<string, unknown> = {};
    const reloading = build({}, { reloadOverrides: () => next });
    const { etag } = (await request(reloading.app).get(CATALOG)).headers;
    next = { deprecations: { getPet: { deprecatedAt: '2026-11-21T00:00:00Z', documentationUrl: DEPRECATION_PAGE } } };
    await reloading.reload();
    const res = await request(reloading.app).get(CATALOG).set('If-None-Match', String(etag));
    expect(res.status).toBe(200);
    expect(res.headers.etag).not.toBe(etag);
  });
});

describe('with CORS on', () => {
  it("tells an allowed origin's page it may read the catalog", async () => {
    const cors = build({ cors: { allowedOrigins: { production: ['https://app.example'], staging: [] } } });
    const res = await request(cors.app).get(CATALOG).set('Origin', 'https://app.example');
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(res.headers.vary).toBe('Origin');
  });

  it("answers an allowed origin's preflight for the catalog itself: 204, GET and HEAD, nothing forwarded", async () => {
    const cors = build({ cors: { allowedOrigins: { production: ['https://app.example'], staging: [] } } });
    const res = await request(cors.app)
      .options(CATALOG)
      .set('Origin', 'https://app.example')
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'x-request-id');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(res.headers['access-control-allow-methods']).toBe('GET, HEAD');
    expect(res.headers['access-control-allow-headers']).toBe('authorization, content-type, x-request-id, traceparent, tracestate, baggage');
    expect(v1.requests).toEqual([]);
  });
});

describe('metrics', () => {
  let counted: TestGateway;
  let running: RunningGateway;
  beforeAll(async () => {
    counted = build({}, { env: { PORT: '0', ADMIN_PORT: '0' } });
    running = await counted.listen();
  });
  afterAll(async () => {
    await running?.shutdown('test over');
  });

  it("counts a catalog request under its operation on the admin listener's /metrics", async () => {
    expect((await fetch(`http://127.0.0.1:${running.port}${CATALOG}`)).status).toBe(200);
    const scraped = await (await fetch(`http://127.0.0.1:${running.adminPort}/metrics`)).text();
    const requests = seriesKey('petstore_gateway_requests_total', { operation: 'getApiCatalog', method: 'GET', status_code: '200', environment: 'production' });
    expect(parseExposition(scraped).get(requests)).toBe(1);
  });
});
