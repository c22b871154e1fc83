// While the backend is down the gateway fails fast with 503 upstream_unavailable, then recovers by itself.
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { waitFor } from '../helpers/start-gateway-process.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../helpers/start-upstream.ts';

let upstream: ScriptedUpstream | undefined;
let gateway: TestGateway | undefined;
afterEach(async () => {
  gateway?.close();
  await upstream?.close();
});

const breaker = { upstream: { circuitBreaker: { failureThreshold: 3, openMs: 300 } } };

describe('the circuit breaker in front of the backend', () => {
  it('opens after consecutive failures, answers 503 with Retry-After without calling the backend, and closes after a good trial', async () => {
    let healthy = false;
    upstream = await startScriptedUpstream((req, res) => {
      if (healthy) res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]');
      else req.socket.destroy();
    });
    gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl, overrides: breaker });
    const call = () => request(gateway!.app).get('/v1/pets').set('Authorization', `Bearer ${gateway!.apiKey}`);

    for (let i = 0; i < 3; i++) expect((await call()).status).toBe(502);
    const contacted = upstream.requests;
    const refused = await call();
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body).toEqual({ code: 'upstream_unavailable', message: 'The pet store backend is unavailable; retry shortly', status: 503 });
    expect(upstream.requests).toBe(contacted);
    expect(parseExposition(await gateway.scrape()).get(seriesKey('petstore_gateway_upstream_circuit_open', { environment: 'production' }))).toBe(1);

    healthy = true;
    // cockatiel's half-open delay runs on real time; poll for the trial request's success.
    await waitFor(async () => (await call()).status === 200, 3000, 50);
    expect((await call()).status).toBe(200);
    expect(parseExposition(await gateway.scrape()).get(seriesKey('petstore_gateway_upstream_circuit_open', { environment: 'production' }))).toBe(0);
  });

  it('counts 502/503/504 answers from the backend as failures, but not 500 or 404', async () => {
    let status = 500;
    upstream = await startScriptedUpstream((_req, res) => {
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify({ code: 'x', message: 'x', status }));
    });
    gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl, overrides: breaker });
    const call = () => request(gateway!.app).get('/v1/pets').set('Authorization', `Bearer ${gateway!.apiKey}`);
    for (let i = 0; i < 5; i++) expect((await call()).status).toBe(500);
    status = 404;
    for (let i = 0; i < 5; i++) expect((await call()).status).toBe(404);
    status = 503;
    for (let i = 0; i < 3; i++) expect((await call()).status).toBe(503);
    const open = await call();
    expect(open.body.code).toBe('upstream_unavailable');
  });

  it('does not open on client errors the gateway refuses itself', async () => {
    upstream = await startScriptedUpstream((_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]'));
    gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl, overrides: breaker });
    for (let i = 0; i < 5; i++) expect((await request(gateway.app).get('/v1/pets?limit=0').set('Authorization', `Bearer ${gateway.apiKey}`)).status).toBe(400);
    expect((await request(gateway.app).get('/v1/pets').set('Authorization', `Bearer ${gateway.apiKey}`)).status).toBe(200);
  });
});
