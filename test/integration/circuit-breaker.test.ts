// While the backend is down the gateway fails fast with 503 upstream_unavailable, then recovers by itself.
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../../support/start-upstream.ts';

let upstream: ScriptedUpstream | undefined;
let gateway: TestGateway | undefined;
afterEach(async () => {
  gateway?.close();
  await upstream?.close();
});

// Open long enough that the calls just after the failures meet it open on a slow machine too.
const breaker = { upstream: { circuitBreaker: { failureThreshold: 3, openMs: 1500 } } };

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
    expect(refused.headers['retry-after']).toBe('2');
    expect(refused.body).toEqual({ code: 'upstream_unavailable', message: 'The pet store backend is unavailable; retry shortly', status: 503 });
    expect(upstream.requests).toBe(contacted);
    expect(parseExposition(await gateway.scrape()).get(seriesKey('petstore_gateway_upstream_circuit_open', { environment: 'production' }))).toBe(1);

    healthy = true;
    // cockatiel's half-open delay runs on real time; poll for the trial request's success.
    await waitFor(async () => (await call()).status === 200, 8000, 50);
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

  it('answers 503 at once while its one trial request is in flight, instead of making callers wait for the trial', async () => {
    // The first connection is reset (a failure that opens the circuit); every later request is held unanswered.
    let read = 0;
    let trialArrived: () => void = () => undefined;
    const trialAtUpstream = new Promise<'trial'>((resolve) => (trialArrived = () => resolve('trial')));
    upstream = await startScriptedUpstream((req) => {
      if (++read === 1) req.socket.destroy();
      else trialArrived();
    });
    gateway = buildTestGateway({
      upstreamUrl: upstream.baseUrl,
      overrides: { upstream: { timeoutMs: 20_000, circuitBreaker: { failureThreshold: 1, openMs: 200 } } },
    });
    const call = () =>
      request(gateway!.app)
        .get('/v1/pets')
        .set('Authorization', `Bearer ${gateway!.apiKey}`)
        .then((res) => res);
    expect((await call()).status).toBe(502);

    // Refused while open; the first call after openMs is let through as the trial, and is held by the upstream.
    let trial: Promise<unknown> | undefined;
    while (trial === undefined) {
      const attempt = call();
      const first = await Promise.race([attempt, trialAtUpstream]);
      if (first === 'trial') trial = attempt;
      else expect(first.status).toBe(503);
    }
    let trialSettled = false;
    void trial.finally(() => (trialSettled = true));

    const during = await Promise.all(Array.from({ length: 5 }, call));
    expect(during.map((res) => res.status)).toEqual([503, 503, 503, 503, 503]);
    expect(during[0]!.body).toEqual({ code: 'upstream_unavailable', message: 'The pet store backend is unavailable; retry shortly', status: 503 });
    expect(trialSettled).toBe(false);
    expect(read).toBe(2);
  });
});
