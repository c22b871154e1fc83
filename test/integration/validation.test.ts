// Validation before proxying: each refusal is a 400 (or 413/415) Error that names the offending field.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { listen, rawRequest } from '../helpers/raw-request.ts';
import { startPetStore } from '../../support/start-upstream.ts';

let backend: SampleBackend;
let gateway: TestGateway;
let auth: string;

beforeAll(async () => {
  backend = await startPetStore();
  gateway = buildTestGateway({ upstreamUrl: backend.baseUrl, overrides: { requests: { maxBodyBytes: 1024 } } });
  auth = `Bearer ${gateway.apiKey}`;
});
afterAll(async () => {
  gateway.close();
  await backend.close();
});

async function expectRefusal(path: string, message: string) {
  const before = backend.received.length;
  const res = await request(gateway.app).get(path).set('Authorization', auth);
  expect(res.status, path).toBe(400);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.body, path).toEqual({ code: 'invalid_request', message, status: 400 });
  expect(backend.received.length, `${path} reached the upstream`).toBe(before);
}

function createPet(body: string, contentType = 'application/json') {
  return request(gateway.app).post('/v1/pets').set('Authorization', auth).set('Content-Type', contentType).send(body);
}

describe('listPets: limit', () => {
  it("forwards a request without limit unchanged (the default 20 is the backend's to apply)", async () => {
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', auth);
    expect(res.status).toBe(200);
    expect(backend.received.at(-1)!.url).toBe('/v1/pets');
  });

  it.each(['1', '20', '100'])('accepts limit=%s', async (limit) => {
    const res = await request(gateway.app).get(`/v1/pets?limit=${limit}`).set('Authorization', auth);
    expect(res.status).toBe(200);
    expect(backend.received.at(-1)!.url).toBe(`/v1/pets?limit=${limit}`);
  });

  it.each([
    ['0', "Query parameter 'limit' must be >= 1"],
    ['101', "Query parameter 'limit' must be <= 100"],
    ['-1', "Query parameter 'limit' must be >= 1"],
    ['1.5', "Query parameter 'limit' must be an integer"],
    ['1e2', "Query parameter 'limit' must be an integer"],
    ['abc', "Query parameter 'limit' must be an integer"],
    ['', "Query parameter 'limit' must be an integer"],
    ['%20', "Query parameter 'limit' must be an integer"],
    ['0x10', "Query parameter 'limit' must be an integer"],
    ['010', "Query parameter 'limit' must be an integer"],
    ['99999999999999999999', "Query parameter 'limit' must be an integer in the int64 range"],
  ])('refuses limit=%s', async (limit, message) => {
    await expectRefusal(`/v1/pets?limit=${limit}`, message);
  });

  it('refuses a repeated limit', async () => {
    await expectRefusal('/v1/pets?limit=5&limit=6', "Query parameter 'limit' must be given once");
  });
});

describe('listPets: status', () => {
  it.each(['available', 'pending', 'sold'])('accepts status=%s and forwards the filter', async (status) => {
    const res = await request(gateway.app).get(`/v1/pets?status=${status}`).set('Authorization', auth);
    expect(res.status).toBe(200);
    expect(res.body.every((pet: { status: string }) => pet.status === status)).toBe(true);
  });

  it.each(['adopted', 'Available', ''])('refuses status=%s', async (status) => {
    await expectRefusal(`/v1/pets?status=${status}`, "Query parameter 'status' must be one of: available, pending, sold");
  });

  it('refuses a query parameter the operation does not declare', async () => {
    await expectRefusal('/v1/pets?offset=10', "Query parameter 'offset' is not accepted by listPets");
  });
});

describe('getPet: petId', () => {
  it('accepts the largest int64', async () => {
    const res = await request(gateway.app).get('/v1/pets/9223372036854775807').set('Authorization', auth);
    expect(res.status).toBe(404); // the backend's answer: no such pet
    expect(backend.received.at(-1)!.url).toBe('/v1/pets/9223372036854775807');
  });

  it.each([
    ['abc', "Path parameter 'petId' must be an integer"],
    ['1.0', "Path parameter 'petId' must be an integer"],
    ['1e3', "Path parameter 'petId' must be an integer"],
    ['9223372036854775808', "Path parameter 'petId' must be an integer in the int64 range"],
    ['-9223372036854775809', "Path parameter 'petId' must be an integer in the int64 range"],
  ])('refuses petId=%s', async (petId, message) => {
    await expectRefusal(`/v1/pets/${petId}`, message);
  });
});

describe('createPet: body', () => {
  it('forwards a valid body byte for byte', async () => {
    const body = '{"name":"Nibbles","categoryId":4,"status":"available"}';
    const res = await createPet(body);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'Nibbles', categoryId: 4, status: 'available' });
    expect(backend.received.at(-1)!.body).toBe(body);
  });

  it('accepts a body without status, and with a charset parameter', async () => {
    const res = await createPet('{"name":"Tom","categoryId":2}', 'application/json; charset=utf-8');
    expect(res.status).toBe(201);
  });

  it('keeps int64 precision: the largest int64 categoryId is accepted and forwarded as sent', async () => {
    const body = '{"name":"Big","categoryId":9223372036854775807}';
    await createPet(body);
    expect(backend.received.at(-1)!.body).toBe(body);
  });

  it.each([
    ['{"categoryId":1}', "Request body field 'name' is required"],
    ['{"name":"Rex"}', "Request body field 'categoryId' is required"],
    ['{"name":7,"categoryId":1}', "Request body field 'name' must be string"],
    ['{"name":"Rex","categoryId":"1"}', "Request body field 'categoryId' must be integer"],
    ['{"name":"Rex","categoryId":1.5}', "Request body field 'categoryId' must be integer"],
    ['{"name":"Rex","categoryId":9223372036854775808}', "Request body field 'categoryId' must be an integer in the int64 range"],
    ['{"name":"Rex","categoryId":1,"status":"adopted"}', "Request body field 'status' must be one of: available, pending, sold"],
    ['[]', 'Request body must be object'],
    ['"Rex"', 'Request body must be object'],
    ['null', 'Request body must be object'],
  ])('refuses %s', async (body, message) => {
    const before = backend.received.length;
    const res = await createPet(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'invalid_request', message, status: 400 });
    expect(backend.received.length).toBe(before);
  });

  it('refuses malformed JSON with 400', async () => {
    const res = await createPet('{"name":');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'invalid_request', message: 'Request body is not valid JSON', status: 400 });
  });

  it('refuses a missing body with 400', async () => {
    const res = await request(gateway.app).post('/v1/pets').set('Authorization', auth);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'invalid_request', message: 'Request body is required', status: 400 });
  });

  it('refuses a non-JSON media type with 415', async () => {
    const res = await createPet('name=Rex', 'application/x-www-form-urlencoded');
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ code: 'unsupported_media_type', message: 'Request body must be sent as application/json', status: 415 });
  });

  it('refuses a body without a media type with 415', async () => {
    const server = await listen(gateway.app);
    try {
      const res = await rawRequest(server.port, { method: 'POST', path: '/v1/pets', headers: { Authorization: auth }, body: '{"name":"Rex","categoryId":1}' });
      expect(res.status).toBe(415);
      expect(JSON.parse(res.body)).toMatchObject({ code: 'unsupported_media_type', status: 415 });
    } finally {
      await server.close();
    }
  });

  it('refuses a body in another charset with 415', async () => {
    const res = await createPet('{"name":"Rex","categoryId":1}', 'application/json; charset=iso-8859-1');
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ code: 'unsupported_media_type', message: 'Request body must be encoded as UTF-8', status: 415 });
  });

  it('refuses a compressed body with 415, since it forwards what it validated', async () => {
    const res = await request(gateway.app)
      .post('/v1/pets')
      .set('Authorization', auth)
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .send('not really gzip');
    expect(res.status).toBe(415);
    expect(res.body.code).toBe('unsupported_media_type');
  });

  it('refuses a body over the configured size with 413', async () => {
    const before = backend.received.length;
    const res = await createPet(JSON.stringify({ name: 'x'.repeat(1100), categoryId: 1 }));
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ code: 'payload_too_large', message: 'Request body is larger than the gateway accepts', status: 413 });
    expect(backend.received.length).toBe(before);
  });

  it('refuses a body on an operation that takes none', async () => {
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', auth).set('Content-Type', 'application/json').send('{}');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'invalid_request', message: 'listPets takes no request body', status: 400 });
  });
});
