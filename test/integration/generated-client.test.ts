// A client generated from the interface document drives the gateway on a real port, and the generated types cannot drift from the document.
import { readFileSync } from 'node:fs';
import createClient, { type Client } from 'openapi-fetch';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import type { components, paths } from '../generated/petstore.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { listen } from '../helpers/raw-request.ts';
import { startPetStore } from '../../support/start-upstream.ts';

type ErrorBody = components['schemas']['Error'];

const DOCUMENT = new URL('../../config/petstore.openapi.yaml', import.meta.url);
const GENERATED = new URL('../generated/petstore.ts', import.meta.url);

describe('test/generated/petstore.ts', () => {
  it('is what openapi-typescript generates from the document now (regenerate with npm run generate:client)', async () => {
    // The same calls the CLI makes, with its defaults.
    const generated = COMMENT_HEADER + astToString(await openapiTS(DOCUMENT, { silent: true }));
    expect(readFileSync(GENERATED, 'utf8')).toBe(generated);
  });
});

let backend: SampleBackend;
let gateway: TestGateway;
let server: Awaited<ReturnType<typeof listen>>;
let client: Client<paths>;
let anonymous: Client<paths>;

beforeAll(async () => {
  backend = await startPetStore();
  gateway = buildTestGateway({ upstreamUrl: backend.baseUrl });
  server = await listen(gateway.app);
  const baseUrl = `http://127.0.0.1:${server.port}/v1`;
  client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${gateway.apiKey}` } });
  anonymous = createClient<paths>({ baseUrl });
});
afterAll(async () => {
  await server?.close();
  gateway?.close();
  await backend?.close();
});

describe('the generated client against the gateway', () => {
  it('lists animals', async () => {
    const { data, error, response } = await client.GET('/pets', { params: { query: { limit: 2, status: 'available' } } });
    expect(response.status).toBe(200);
    expect(error).toBeUndefined();
    expect(data).toEqual([
      { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
      { id: 4, name: 'Biscuit', categoryId: 1, status: 'available' },
    ]);
  });

  it('creates an animal, then gets it with the deprecation headers', async () => {
    const created = await client.POST('/pets', { body: { name: 'Nibbles', categoryId: 4, status: 'available' } });
    expect(created.response.status).toBe(201);
    const pet = created.data!;
    expect(pet).toEqual({ id: pet.id, name: 'Nibbles', categoryId: 4, status: 'available' });

    const { data, response } = await client.GET('/pets/{petId}', { params: { path: { petId: pet.id } } });
    expect(response.status).toBe(200);
    expect(data).toEqual(pet);
    expect(response.headers.get('deprecation')).toBe(`@${Date.parse('2026-11-21T00:00:00Z') / 1000}`);
    expect(response.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(response.headers.get('link')).toBe('</v1/pets>; rel="successor-version"');
  });

  it('reads a typed Error body for a 400', async () => {
    const { data, error, response } = await client.GET('/pets', { params: { query: { limit: 500 } } });
    const body: ErrorBody | undefined = error;
    expect(response.status).toBe(400);
    expect(data).toBeUndefined();
    expect(body).toEqual({ code: 'invalid_request', message: "Query parameter 'limit' must be <= 100", status: 400 });
  });

  it('reads a typed Error body for a 401', async () => {
    const { data, error, response } = await anonymous.POST('/pets', { body: { name: 'Nibbles', categoryId: 4 } });
    const body: ErrorBody | undefined = error;
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="petstore"');
    expect(data).toBeUndefined();
    expect(body).toEqual({ code: 'unauthorized', message: 'An API key is required: send it as "Authorization: Bearer <API key>"', status: 401 });
  });
});
