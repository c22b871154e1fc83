// Routing: only the document's operations reach the upstream; everything else is refused with an Error.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import type { TestGateway } from '../helpers/build-test-app.ts';
import { listen, rawRequest } from '../helpers/raw-request.ts';
import { startPetStoreGateway, type PetStoreGateway } from '../helpers/start-pet-store-gateway.ts';

let backend: SampleBackend;
let gateway: TestGateway;
let auth: string;
let petStore: PetStoreGateway;

beforeAll(async () => {
  petStore = await startPetStoreGateway();
  ({ backend, gateway, auth } = petStore);
});
afterAll(() => petStore.close());

describe('routing to operations', () => {
  it('forwards listPets to the upstream path under its /v1 base', async () => {
    const res = await request(gateway.app).get('/v1/pets?limit=2').set('Authorization', auth);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
      { id: 2, name: 'Mittens', categoryId: 2, status: 'pending' },
    ]);
    expect(backend.received.at(-1)).toMatchObject({ method: 'GET', url: '/v1/pets?limit=2' });
  });

  it('answers 404 with an Error for a path that is not an operation', async () => {
    const res = await request(gateway.app).get('/v1/store/orders').set('Authorization', auth);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({ code: 'not_found', message: 'No operation of the interface is served at GET /v1/store/orders', status: 404 });
  });

  it('answers 404 for a trailing slash, which is another path', async () => {
    const res = await request(gateway.app).get('/v1/pets/').set('Authorization', auth);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it('answers 404 for paths outside /v1', async () => {
    for (const path of ['/', '/pets', '/v2/pets', '/V1/pets', '/v1x/pets', '/v1.0/pets', '/healthz', '/metrics']) {
      const res = await request(gateway.app).get(path).set('Authorization', auth);
      expect(res.status, path).toBe(404);
      expect(res.body, path).toEqual({ code: 'not_found', message: 'No operation of the interface is served at this path', status: 404 });
    }
  });

  it('answers 405 with Allow for another method on a known path', async () => {
    const res = await request(gateway.app).delete('/v1/pets').set('Authorization', auth);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD, POST');
    expect(res.body).toEqual({ code: 'method_not_allowed', message: 'DELETE is not allowed here; allowed: GET, HEAD, POST', status: 405 });
  });

  it('answers 405 with Allow: GET, HEAD on the pet path', async () => {
    const res = await request(gateway.app).put('/v1/pets/1').set('Authorization', auth).send({});
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
  });

  it('keeps traversal and encoded tricks away from the upstream', async () => {
    const before = backend.received.length;
    const tricks = [
      '/v1/pets/%2e%2e',
      '/v1/pets/%2E%2E/admin',
      '/v1/pets/..%2fadmin',
      '/v1/pets%2f1',
      '/v1/pets/1%00',
      '/v1/pets/%00',
      '/v1/pets/..',
      '/v1/./pets',
      '/v1//pets',
      '/v1/pets/1%5c..',
      '/v1/pets/%',
      '/v1/pets/%c3%28',
    ];
    const server = await listen(gateway.app);
    try {
      for (const path of tricks) {
        const res = await rawRequest(server.port, { path, headers: { Authorization: auth } });
        expect(res.status, path).toBe(404);
        expect(JSON.parse(res.body), path).toMatchObject({ code: 'not_found', status: 404 });
      }
    } finally {
      await server.close();
    }
    expect(backend.received.length).toBe(before);
  });
});
