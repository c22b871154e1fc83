// Proxying: what the upstream receives, what clients get back, and how each upstream failure is answered.
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { startPetStoreGateway, type PetStoreGateway } from '../helpers/start-pet-store-gateway.ts';
import { startScriptedUpstream, refusedPort, type ScriptedUpstream } from '../../support/start-upstream.ts';

let backend: SampleBackend;
let gateway: TestGateway;
let auth: string;
let petStore: PetStoreGateway;

beforeAll(async () => {
  petStore = await startPetStoreGateway();
  ({ backend, gateway, auth } = petStore);
});
afterAll(() => petStore.close());

describe('what the upstream receives', () => {
  it("gets the client's well-formed X-Request-Id, which is also returned", async () => {
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', auth).set('X-Request-Id', 'client-trace-0042');
    expect(res.headers['x-request-id']).toBe('client-trace-0042');
    expect(backend.received.at(-1)!.headers['x-request-id']).toBe('client-trace-0042');
  });

  it("gets a generated X-Request-Id when the client's is malformed, and the client gets the same one", async () => {
    const res = await request(gateway.app).get('/v1/pets').set('Authorization', auth).set('X-Request-Id', 'bad id with spaces');
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(backend.received.at(-1)!.headers['x-request-id']).toBe(res.headers['x-request-id']);
  });

  it("returns a request id on the gateway's own refusals too", async () => {
    const res = await request(gateway.app).get('/v1/pets').set('X-Request-Id', 'refused-trace-01');
    expect(res.status).toBe(401);
    expect(res.headers['x-request-id']).toBe('refused-trace-01');
  });

  it('gets X-Forwarded-For, -Proto and -Host, appended to what the client sent', async () => {
    await request(gateway.app).get('/v1/pets').set('Authorization', auth).set('Host', 'api.petstore.test').set('X-Forwarded-For', '203.0.113.7');
    const headers = backend.received.at(-1)!.headers;
    expect(headers['x-forwarded-for']).toMatch(/^203\.0\.113\.7, (::ffff:)?127\.0\.0\.1$/);
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-forwarded-host']).toBe('api.petstore.test');
    expect(headers.host).toBe(new URL(backend.baseUrl).host);
  });

  it('gets no hop-by-hop headers of the client connection', async () => {
    await request(gateway.app).get('/v1/pets').set('Authorization', auth).set('Connection', 'close, X-Secret-Hop').set('X-Secret-Hop', '1');
    const headers = backend.received.at(-1)!.headers;
    expect(headers['x-secret-hop']).toBeUndefined();
    expect(headers.connection).toBe('keep-alive');
  });
});

describe('upstream answers', () => {
  let upstream: ScriptedUpstream | undefined;
  let scripted: TestGateway | undefined;
  afterEach(async () => {
    scripted?.close();
    await upstream?.close();
    scripted = upstream = undefined;
  });

  async function through(handler: Parameters<typeof startScriptedUpstream>[0], env: Record<string, string> = {}) {
    upstream = await startScriptedUpstream(handler);
    scripted = buildTestGateway({ upstreamUrl: upstream.baseUrl, env });
    return request(scripted.app).get('/v1/pets').set('Authorization', `Bearer ${scripted.apiKey}`);
  }

  it('passes an Error-shaped upstream error through unchanged', async () => {
    const body = { code: 'backend_busy', message: 'Try later', status: 503 };
    const res = await through((_req, res) => {
      res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '7' }).end(JSON.stringify(body));
    });
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('7');
    expect(res.body).toEqual(body);
  });

  it('wraps an upstream error body that is not Error-shaped, keeping the upstream status', async () => {
    const res = await through((_req, res) => {
      res.writeHead(500, { 'Content-Type': 'text/html' }).end('<h1>Internal Server Error</h1>');
    });
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({ code: 'upstream_error', message: 'The pet store backend answered 500 Internal Server Error', status: 500 });
  });

  it('wraps an empty upstream 404 into not_found', async () => {
    const res = await through((_req, res) => {
      res.writeHead(404).end();
    });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: 'not_found', message: 'The pet store backend answered 404 Not Found', status: 404 });
  });

  it('passes success responses through with the headers the relay policy allows, and no others', async () => {
    const res = await through((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'X-Backend': 'b1', 'Cache-Control': 'max-age=5' }).end('[]');
    });
    expect(res.status).toBe(200);
    expect(res.headers['x-backend']).toBeUndefined();
    expect(res.headers['cache-control']).toBe('max-age=5');
    expect(res.body).toEqual([]);
  });

  it("drops the fields each answer's own Connection lists, one answer after another", async () => {
    let answers = 0;
    const first = await through((_req, res) => {
      const connection = answers++ % 2 === 0 ? 'keep-alive, Cache-Control' : 'keep-alive';
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=5', Connection: connection }).end('[]');
    });
    const cacheControl = [first.headers['cache-control']];
    for (let ask = 0; ask < 3; ask++) {
      cacheControl.push((await request(scripted!.app).get('/v1/pets').set('Authorization', `Bearer ${scripted!.apiKey}`)).headers['cache-control']);
    }
    expect(cacheControl).toEqual([undefined, 'max-age=5', undefined, 'max-age=5']);
  });

  it('answers 504 when the upstream stays silent past UPSTREAM_TIMEOUT_MS', async () => {
    const res = await through(
      () => {
        /* never answers */
      },
      { UPSTREAM_TIMEOUT_MS: '200' },
    );
    expect(res.status).toBe(504);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({ code: 'gateway_timeout', message: 'The pet store backend did not answer in time', status: 504 });
  });

  it('answers 504 when the whole exchange outlasts upstream.totalTimeoutMs, though bytes keep coming', async () => {
    upstream = await startScriptedUpstream((_req, res) => {
      // Headers after 300 ms: never silent for the 1 s idle timeout, but over the 200 ms total.
      setTimeout(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]'), 300);
    });
    scripted = buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { UPSTREAM_TIMEOUT_MS: '1000' }, overrides: { upstream: { totalTimeoutMs: 200 } } });
    const res = await request(scripted.app).get('/v1/pets').set('Authorization', `Bearer ${scripted.apiKey}`);
    expect(res.status).toBe(504);
    expect(res.body).toEqual({ code: 'gateway_timeout', message: 'The pet store backend did not finish its answer in time', status: 504 });
  });

  it('cuts a response that trickles past upstream.totalTimeoutMs', async () => {
    const res = await (async () => {
      upstream = await startScriptedUpstream((_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '100' });
        const drip = setInterval(() => (res.writableEnded ? clearInterval(drip) : res.write(' ')), 50);
        res.on('close', () => clearInterval(drip));
      });
      scripted = buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { UPSTREAM_TIMEOUT_MS: '1000' }, overrides: { upstream: { totalTimeoutMs: 300 } } });
      return request(scripted.app).get('/v1/pets').set('Authorization', `Bearer ${scripted.apiKey}`);
    })().catch((error: Error) => error);
    expect(res).toBeInstanceOf(Error);
  });

  it('answers 502 when the upstream resets the connection', async () => {
    const res = await through((req) => {
      req.socket.destroy();
    });
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ code: 'bad_gateway', message: 'The pet store backend closed the connection before answering', status: 502 });
  });

  it('answers 502 when the upstream refuses the connection', async () => {
    const port = await refusedPort();
    scripted = buildTestGateway({ upstreamUrl: `http://127.0.0.1:${port}/v1` });
    const res = await request(scripted.app).get('/v1/pets').set('Authorization', `Bearer ${scripted.apiKey}`);
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ code: 'bad_gateway', message: 'The pet store backend refused the connection', status: 502 });
  });

  it('cuts the response short when the upstream dies mid-body, rather than pretending it is whole', async () => {
    const res = await through((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '1000' });
      res.write('[{"id":1');
      void sleep(20).then(() => res.socket?.destroy());
    }).catch((error: Error) => error);
    expect(res).toBeInstanceOf(Error);
  });
});
