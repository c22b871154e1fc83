// GET <basePath>/openapi.json: each version's interface document as the gateway compiled it, less its x-internal parts, through the real pipeline.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import request from 'supertest';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../helpers/raw-socket.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const V1_DOCUMENT = join(ROOT, 'config/petstore.openapi.yaml');
const V2_DOCUMENT = join(ROOT, 'test/fixtures/petstore-v2.openapi.yaml');
const V3_DOCUMENT = join(ROOT, 'test/fixtures/petstore-v3-internal.openapi.yaml');
const OPENAPI_JSON = 'application/vnd.oai.openapi+json;version=3.1';
const CATALOG_LINK = '</.well-known/api-catalog>; rel="api-catalog"';

const parsed = (file: string) => parseYaml(readFileSync(file, 'utf8')) as Record<string, unknown>;

let v1: RecordingUpstream;
let v2: RecordingUpstream;
let v3: RecordingUpstream;
/** v1 as shipped, v2 and v3 beside it. */
let gateway: TestGateway;
/** v1 deprecated in favour of v2. */
let retiring: TestGateway;
let scratch: string;

function upstreams(upstream: RecordingUpstream, basePath: string) {
  const url = `http://127.0.0.1:${upstream.port}${basePath}`;
  return { production: url, staging: url };
}

beforeAll(async () => {
  [v1, v2, v3] = await Promise.all([startRecordingUpstream(), startRecordingUpstream(), startRecordingUpstream()]);
  const versions = [
    { document: V2_DOCUMENT, upstreams: upstreams(v2, '/v2') },
    { document: V3_DOCUMENT, upstreams: upstreams(v3, '/v3') },
  ];
  gateway = buildTestGateway({ upstreamUrl: v1.baseUrl, overrides: { versions } });
  retiring = buildTestGateway({
    upstreamUrl: v1.baseUrl,
    overrides: {
      versions: versions.slice(0, 1),
      versionDeprecation: { deprecatedAt: '2026-11-01T00:00:00Z', sunset: '2032-01-01T00:00:00Z', successor: '/v2' },
    },
  });
  scratch = await mkdtemp(join(tmpdir(), 'interface-document-'));
});
beforeEach(() => {
  for (const upstream of [v1, v2, v3]) upstream.requests.length = 0;
});
afterAll(async () => {
  await Promise.all([gateway?.close(), retiring?.close()]);
  await Promise.all([v1?.close(), v2?.close(), v3?.close()]);
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('/v1/openapi.json', () => {
  it('answers GET without an API key: 200, the OpenAPI JSON media type, and a Link to the catalog', async () => {
    const res = await request(gateway.app).get('/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(OPENAPI_JSON);
    expect(res.headers.link).toBe(CATALOG_LINK);
  });

  it('is the YAML document parsed, whole (it marks nothing internal)', async () => {
    const res = await request(gateway.app).get('/v1/openapi.json');
    expect(JSON.parse(res.text)).toEqual(parsed(V1_DOCUMENT));
  });

  it('answers HEAD with the same head and no body', async () => {
    const get = await request(gateway.app).get('/v1/openapi.json');
    const head = await request(gateway.app).head('/v1/openapi.json');
    expect(head.status).toBe(200);
    expect(head.text).toBeUndefined();
    expect([head.headers['content-type'], head.headers['content-length'], head.headers.link]).toEqual([
      get.headers['content-type'],
      String(Buffer.byteLength(get.text)),
      CATALOG_LINK,
    ]);
  });

  it('sends nothing to the upstream', async () => {
    await request(gateway.app).get('/v1/openapi.json');
    expect(v1.requests).toEqual([]);
  });

  it('refuses another method with 405 and Allow, without asking for a key', async () => {
    const res = await request(gateway.app).put('/v1/openapi.json').send({});
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(res.body).toEqual({ code: 'method_not_allowed', message: 'PUT is not allowed here; allowed: GET, HEAD', status: 405 });
  });

  it('says, when v1 is deprecated as a whole, when it goes and where to, before the catalog link', async () => {
    const res = await request(retiring.app).get('/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.deprecation).toBe(`@${Date.parse('2026-11-01T00:00:00Z') / 1000}`);
    expect(res.headers.sunset).toBe('Thu, 01 Jan 2032 00:00:00 GMT');
    expect(res.headers.link).toBe(`</v2>; rel="successor-version", ${CATALOG_LINK}`);
  });
});

describe('the other versions', () => {
  it("serves v2's document under /v2, as its YAML parsed", async () => {
    const res = await request(gateway.app).get('/v2/openapi.json');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual(parsed(V2_DOCUMENT));
    expect(v2.requests).toEqual([]);
  });

  it('leaves out the x-internal operation and path item, and the components only they use', async () => {
    const source = parsed(V3_DOCUMENT) as { paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, unknown> } };
    const { delete: _purge, ...birds } = source.paths['/birds']!;
    const { PurgeConflict: _conflict, BirdAudit: _audit, AuditEntry: _entry, ...schemas } = source.components.schemas;
    const res = await request(gateway.app).get('/v3/openapi.json');
    expect(JSON.parse(res.text)).toEqual({
      ...source,
      paths: { '/birds': birds, '/openapi.json': source.paths['/openapi.json'] },
      components: { ...source.components, schemas },
    });
  });

  it('still serves an x-internal operation, to a caller with a key', async () => {
    const res = await request(gateway.app).get('/v3/birds/audit').set('Authorization', `Bearer ${gateway.apiKey}`);
    expect(res.status).toBe(200);
    expect(v3.requests.map((each) => `${each.method} ${each.url}`)).toEqual(['GET /v3/birds/audit']);
  });
});

describe("the project's OpenAPI linter", () => {
  it.each(['/v1/openapi.json', '/v3/openapi.json'])('finds nothing to warn about in %s as served', async (path) => {
    const file = join(scratch, `${path.split('/')[1]}.json`);
    await writeFile(file, (await request(gateway.app).get(path)).text);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['node_modules/@stoplight/spectral-cli/dist/index.js', 'lint', '--fail-severity=warn', '--ruleset', '.spectral.yaml', file],
      { cwd: ROOT },
    );
    expect(stdout).toContain("No results with a severity of 'warn' or higher found!");
  });
});
