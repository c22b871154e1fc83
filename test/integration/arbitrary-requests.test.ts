// Property: whatever a client sends, the answer is the upstream's or an Error body; never a crash, never a stack trace.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { listen, rawRequest } from '../helpers/raw-request.ts';
import { startPetStore } from '../../support/start-upstream.ts';

let backend: SampleBackend;
let gateway: TestGateway;
let server: Awaited<ReturnType<typeof listen>>;

beforeAll(async () => {
  backend = await startPetStore();
  gateway = buildTestGateway({ upstreamUrl: backend.baseUrl });
  server = await listen(gateway.app);
});
afterAll(async () => {
  await server.close();
  gateway.close();
  await backend.close();
});

const segment = fc.oneof(
  fc.constantFrom('v1', 'pets', '1', '-1', '9223372036854775808', '..', '.', '%2e%2e', '%2f', '%00', '%', '%c3%28', 'store', 'orders', ''),
  fc.stringMatching(/^[A-Za-z0-9._~%-]{0,12}$/),
);
const path = fc.array(segment, { minLength: 0, maxLength: 4 }).map((parts) => `/${parts.join('/')}`);
const query = fc.oneof(
  fc.constant(''),
  fc
    .array(
      fc.tuple(fc.constantFrom('limit', 'status', 'x', ''), fc.oneof(fc.constantFrom('1', '100', '101', '1e2', 'sold', ''), fc.string({ maxLength: 8 }))),
      { maxLength: 3 },
    )
    .map((pairs) => `?${pairs.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&')}`),
);
const body = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('{"name":"Rex","categoryId":1}', '{"name":', '[]', 'null', '{"categoryId":1e400}', '{"name":"x","categoryId":9223372036854775808}'),
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 64 }),
);

it('answers every generated request with a proxied response or an Error body', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
      path,
      query,
      fc.constantFrom<'valid' | 'none' | 'junk'>('valid', 'none', 'junk'),
      fc.constantFrom('application/json', 'text/plain', 'application/json; charset=latin1', ''),
      body,
      async (method, requestPath, search, credential, contentType, payload) => {
        const headers: Record<string, string> = {};
        if (credential === 'valid') headers.Authorization = `Bearer ${gateway.apiKey}`;
        if (credential === 'junk') headers.Authorization = 'Bearer \u00ff';
        if (contentType) headers['Content-Type'] = contentType;
        const res = await rawRequest(server.port, { method, path: requestPath + search, headers, ...(payload === undefined ? {} : { body: payload }) });
        expect(res.status).toBeGreaterThanOrEqual(200);
        expect(res.status).toBeLessThan(600);
        expect(res.body).not.toMatch(/\n\s+at /); // no stack trace
        if (method === 'HEAD') return;
        const proxied = res.status < 400 && credential === 'valid';
        if (proxied) return;
        const parsed = JSON.parse(res.body) as { code: string; message: string; status: number };
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(typeof parsed.code).toBe('string');
        expect(typeof parsed.message).toBe('string');
        expect(parsed.status).toBe(res.status);
        expect(res.status).not.toBe(500);
      },
    ),
    { numRuns: 400 },
  );
});
