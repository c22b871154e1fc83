// The interface document declares what the gateway answers: each (operation, status) is provoked and checked against it.
import { afterAll, beforeAll, expect } from 'vitest';
import { KeyStoreUnavailableError } from '../../src/auth/key-store.ts';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { buildTestGateway, type TestGateway, type TestGatewayOptions } from '../helpers/build-test-app.ts';
import { describeContract, readInterfaceDocument, type ProvokedCase } from '../helpers/openapi-contract.ts';
import { listen, rawRequest, type RawResponse } from '../helpers/raw-request.ts';
import { startPetStore, startScriptedUpstream, refusedPort, type ScriptedUpstream } from '../../support/start-upstream.ts';

const document = readInterfaceDocument(new URL('../../config/petstore.openapi.yaml', import.meta.url));

// ---- The gateways and upstreams the cases run against ------------------------------------------

const SUNSET = Date.parse('2030-12-05T00:00:00Z');
/** High enough that no case opens the circuit by accident: each target counts failures across operations. */
const NEVER_OPENS = { failureThreshold: 1000, openMs: 60_000 };

interface Target {
  gateway: TestGateway;
  port: number;
  close(): Promise<void>;
}

/** Every target writes the legacy X-RateLimit-* fields, which the document declares as an operator's opt-in. */
async function start(options: TestGatewayOptions): Promise<Target> {
  const gateway = buildTestGateway({ ...options, overrides: { ...options.overrides, rateLimit: { legacyHeaders: true } } });
  const server = await listen(gateway.app);
  return {
    gateway,
    port: server.port,
    close: async () => {
      await server.close();
      gateway.close();
    },
  };
}

let backend: SampleBackend;
let silentUpstream: ScriptedUpstream;
let failingUpstream: ScriptedUpstream;
let holdingUpstream: ScriptedUpstream;
/** The sample pet store behind a gateway configured as in production. */
let served: Target;
/** The same, with the clock past getPet's sunset. */
let pastSunset: Target;
/** The same, with the clock inside a brownout window of getPet. */
let browningOut: Target;
/** Nothing listens at the upstream address. */
let refused: Target;
/** The upstream accepts requests and never answers; the gateway waits 100 ms. */
let silent: Target;
/** The circuit breaker is open: one failure opened it, and it stays open for a minute. */
let circuitOpen: Target;
/** The key store cannot answer. */
let keysDown: Target;
/** The upstream answers 500 with a body that is not an Error. */
let failing: Target;
let refusingUpstream: ScriptedUpstream;
/** The upstream refuses the gateway's identity: 401 with its own challenge and Error body. */
let refusing: Target;
/** At capacity: one request in flight, held by the upstream, and `listen.maxInFlight` is 1. */
let crowded: Target;
let held: Promise<unknown>;

beforeAll(async () => {
  backend = await startPetStore();
  silentUpstream = await startScriptedUpstream(() => undefined);
  failingUpstream = await startScriptedUpstream((_req, res) => {
    res.writeHead(500, { 'Content-Type': 'text/plain' }).end('the backend fell over');
  });
  const nowhere = `http://127.0.0.1:${await refusedPort()}/v1`;
  served = await start({ upstreamUrl: backend.baseUrl });
  pastSunset = await start({ upstreamUrl: backend.baseUrl });
  pastSunset.gateway.clock.set(SUNSET);
  const brownout = { start: '2027-03-01T14:00:00Z', end: '2027-03-02T02:00:00Z' };
  browningOut = await start({
    upstreamUrl: backend.baseUrl,
    overrides: { deprecations: { getPet: { deprecatedAt: '2026-11-21T00:00:00Z', brownouts: [brownout] } } },
  });
  browningOut.gateway.clock.set(Date.parse(brownout.start));
  refused = await start({ upstreamUrl: nowhere, overrides: { upstream: { circuitBreaker: NEVER_OPENS } } });
  silent = await start({ upstreamUrl: silentUpstream.baseUrl, overrides: { upstream: { timeoutMs: 100, circuitBreaker: NEVER_OPENS } } });
  circuitOpen = await start({ upstreamUrl: nowhere, overrides: { upstream: { circuitBreaker: { failureThreshold: 1, openMs: 60_000 } } } });
  const tripped = await listPets(circuitOpen);
  expect(tripped.status).toBe(502);
  keysDown = await start({
    upstreamUrl: backend.baseUrl,
    keyStore: { findByHash: () => Promise.reject(new KeyStoreUnavailableError('the key store is down')) },
  });
  failing = await start({ upstreamUrl: failingUpstream.baseUrl, overrides: { upstream: { circuitBreaker: NEVER_OPENS } } });
  refusingUpstream = await startScriptedUpstream((_req, res) => {
    const body = JSON.stringify({ code: 'unauthorized', message: 'Caller identity token refused', status: 401 });
    res.writeHead(401, { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Bearer error="invalid_token"' }).end(body);
  });
  refusing = await start({ upstreamUrl: refusingUpstream.baseUrl });
  let arrived!: () => void;
  const holding = new Promise<void>((resolve) => (arrived = resolve));
  holdingUpstream = await startScriptedUpstream(() => arrived());
  crowded = await start({ upstreamUrl: holdingUpstream.baseUrl, overrides: { listen: { maxInFlight: 1 } } });
  // Cut off when the gateway closes; its answer is not under test.
  held = listPets(crowded).catch(() => undefined);
  await holding;
});

afterAll(async () => {
  for (const target of [served, pastSunset, browningOut, refused, silent, circuitOpen, keysDown, failing, refusing, crowded]) await target?.close();
  await Promise.all([backend?.close(), silentUpstream?.close(), failingUpstream?.close(), refusingUpstream?.close(), holdingUpstream?.close(), held]);
});

interface SendOptions {
  /** The bearer key; the target's own key when absent, no Authorization header when null. */
  key?: string | null;
  body?: string;
  contentType?: string;
}

function send(target: Target, method: string, path: string, options: SendOptions = {}): Promise<RawResponse> {
  const headers: Record<string, string> = {};
  const key = options.key === undefined ? target.gateway.apiKey : options.key;
  if (key !== null) headers.Authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers['Content-Type'] = options.contentType ?? 'application/json';
  return rawRequest(target.port, { method, path, headers, ...(options.body === undefined ? {} : { body: options.body }) });
}

const listPets = (target: Target, options?: SendOptions, query = '') => send(target, 'GET', `/v1/pets${query}`, options);
const createPet = (target: Target, options: SendOptions = {}) =>
  send(target, 'POST', '/v1/pets', { body: JSON.stringify({ name: 'Nibbles', categoryId: 4, status: 'available' }), ...options });
const getPet = (target: Target, options?: SendOptions, id = '1') => send(target, 'GET', `/v1/pets/${id}`, options);

/** Written with RateLimit, on a request the limiter counted. */
const LEGACY_RATE_LIMIT_FIELDS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

/** A key with a quota of one call a day: its second call, to any operation, is refused. */
async function overQuota(call: (options: SendOptions) => Promise<RawResponse>): Promise<RawResponse> {
  const key = served.gateway.addKey({ quotaPerDay: 1 });
  const first = await call({ key });
  expect(first.status).toBeLessThan(300);
  return call({ key });
}

/** A key allowed one request per minute per operation: its second request is refused. */
async function overLimit(call: (options: SendOptions) => Promise<RawResponse>): Promise<RawResponse> {
  const key = served.gateway.addKey({ rateLimitPerMinute: 1 });
  const first = await call({ key });
  expect(first.status).toBeLessThan(300);
  return call({ key });
}

/** The path asked again with the ETag its first answer gave. */
async function revalidate(target: Target, path: string): Promise<RawResponse> {
  const first = await rawRequest(target.port, { method: 'GET', path, headers: {} });
  return rawRequest(target.port, { method: 'GET', path, headers: { 'If-None-Match': String(first.headers.etag) } });
}

const revokedKey = () => served.gateway.addKey({ revoked: true });
const tooLarge = JSON.stringify({ name: 'x'.repeat(70_000), categoryId: 4 });

// ---- The cases: one request per answer, named as the document names it --------------------------

const CASES: readonly ProvokedCase[] = [
  { operation: 'listPets', declared: 200, why: 'a page of animals', send: () => listPets(served, {}, '?limit=2&status=available') },
  { operation: 'listPets', declared: 400, why: 'a limit over 100', send: () => listPets(served, {}, '?limit=500') },
  { operation: 'listPets', declared: 400, why: 'a body, which listPets does not take', send: () => listPets(served, { body: '{}' }) },
  { operation: 'listPets', declared: 401, why: 'no API key', send: () => listPets(served, { key: null }) },
  { operation: 'listPets', declared: 401, why: 'a revoked API key', send: () => listPets(served, { key: revokedKey() }) },
  { operation: 'listPets', declared: 429, why: "the key's rate limit used up", send: () => overLimit((options) => listPets(served, options)) },
  { operation: 'listPets', declared: 429, why: "the key's daily quota used up", send: () => overQuota((options) => listPets(served, options)) },
  { operation: 'listPets', declared: 502, why: 'the backend refuses connections', send: () => listPets(refused) },
  { operation: 'listPets', declared: 502, why: "the backend refuses the gateway's identity (401)", send: () => listPets(refusing) },
  { operation: 'listPets', declared: 503, why: 'the circuit breaker is open', send: () => listPets(circuitOpen) },
  {
    operation: 'listPets',
    declared: 503,
    why: 'API keys cannot be checked',
    send: () => listPets(keysDown),
    absent: ['ratelimit', 'ratelimit-policy', ...LEGACY_RATE_LIMIT_FIELDS],
  },
  {
    operation: 'listPets',
    declared: 503,
    why: 'the gateway is at capacity',
    send: () => listPets(crowded),
    absent: ['ratelimit', 'ratelimit-policy', ...LEGACY_RATE_LIMIT_FIELDS],
  },
  { operation: 'listPets', declared: 504, why: 'the backend does not answer in time', send: () => listPets(silent) },
  { operation: 'listPets', declared: 'default', status: 500, why: 'the backend fails with a body that is not an Error', send: () => listPets(failing) },

  { operation: 'createPet', declared: 201, why: 'a valid animal', send: () => createPet(served) },
  { operation: 'createPet', declared: 400, why: 'a body without categoryId', send: () => createPet(served, { body: '{"name":"Tom"}' }) },
  { operation: 'createPet', declared: 400, why: 'a body that is not JSON', send: () => createPet(served, { body: '{"name":' }) },
  { operation: 'createPet', declared: 401, why: 'no API key', send: () => createPet(served, { key: null }) },
  { operation: 'createPet', declared: 413, why: 'a body over 64 KiB', send: () => createPet(served, { body: tooLarge }) },
  { operation: 'createPet', declared: 415, why: 'a body sent as text/plain', send: () => createPet(served, { contentType: 'text/plain' }) },
  { operation: 'createPet', declared: 429, why: "the key's rate limit used up", send: () => overLimit((options) => createPet(served, options)) },
  { operation: 'createPet', declared: 502, why: 'the backend refuses connections', send: () => createPet(refused) },
  { operation: 'createPet', declared: 502, why: "the backend refuses the gateway's identity (401)", send: () => createPet(refusing) },
  { operation: 'createPet', declared: 503, why: 'the circuit breaker is open', send: () => createPet(circuitOpen) },
  {
    operation: 'createPet',
    declared: 503,
    why: 'API keys cannot be checked',
    send: () => createPet(keysDown),
    absent: ['ratelimit', 'ratelimit-policy', ...LEGACY_RATE_LIMIT_FIELDS],
  },
  {
    operation: 'createPet',
    declared: 503,
    why: 'the gateway is at capacity',
    send: () => createPet(crowded),
    absent: ['ratelimit', 'ratelimit-policy', ...LEGACY_RATE_LIMIT_FIELDS],
  },
  { operation: 'createPet', declared: 504, why: 'the backend does not answer in time', send: () => createPet(silent) },
  { operation: 'createPet', declared: 'default', status: 500, why: 'the backend fails with a body that is not an Error', send: () => createPet(failing) },

  { operation: 'getPet', declared: 200, why: 'an animal that exists', send: () => getPet(served) },
  { operation: 'getPet', declared: 400, why: 'a petId that is not an integer', send: () => getPet(served, {}, 'abc') },
  { operation: 'getPet', declared: 400, why: 'a query parameter, which getPet does not take', send: () => getPet(served, {}, '1?verbose=1') },
  { operation: 'getPet', declared: 400, why: 'a body, which getPet does not take', send: () => getPet(served, { body: '{}' }) },
  { operation: 'getPet', declared: 401, why: 'no API key', send: () => getPet(served, { key: null }) },
  { operation: 'getPet', declared: 401, why: 'a revoked API key', send: () => getPet(served, { key: revokedKey() }) },
  { operation: 'getPet', declared: 404, why: 'an animal the backend does not have', send: () => getPet(served, {}, '424242') },
  { operation: 'getPet', declared: 410, why: 'a request from the sunset on', send: () => getPet(pastSunset), absent: ['retry-after'] },
  { operation: 'getPet', declared: 410, why: 'a request during a brownout', send: () => getPet(browningOut) },
  { operation: 'getPet', declared: 429, why: "the key's rate limit used up", send: () => overLimit((options) => getPet(served, options)) },
  { operation: 'getPet', declared: 502, why: 'the backend refuses connections', send: () => getPet(refused) },
  { operation: 'getPet', declared: 502, why: "the backend refuses the gateway's identity (401)", send: () => getPet(refusing) },
  { operation: 'getPet', declared: 503, why: 'the circuit breaker is open', send: () => getPet(circuitOpen) },
  {
    operation: 'getPet',
    declared: 503,
    why: 'API keys cannot be checked',
    send: () => getPet(keysDown),
    absent: ['ratelimit', 'ratelimit-policy', ...LEGACY_RATE_LIMIT_FIELDS],
  },
  {
    operation: 'getPet',
    declared: 503,
    why: 'the gateway is at capacity (refused before the operation is known)',
    send: () => getPet(crowded),
    absent: ['ratelimit', 'ratelimit-policy', ...LEGACY_RATE_LIMIT_FIELDS, 'deprecation', 'sunset', 'link'],
  },
  { operation: 'getPet', declared: 504, why: 'the backend does not answer in time', send: () => getPet(silent) },
  { operation: 'getPet', declared: 'default', status: 500, why: 'the backend fails with a body that is not an Error', send: () => getPet(failing) },

  { operation: 'getInterfaceDocument', declared: 200, why: 'no API key needed', send: () => send(served, 'GET', '/v1/openapi.json', { key: null }) },
  { operation: 'getInterfaceDocument', declared: 304, why: 'If-None-Match with its ETag', send: () => revalidate(served, '/v1/openapi.json') },
  { operation: 'getInterfaceDocument', declared: 503, why: 'the gateway is at capacity', send: () => send(crowded, 'GET', '/v1/openapi.json', { key: null }) },

  { operation: 'getApiCatalog', declared: 200, why: 'no API key needed', send: () => send(served, 'GET', '/.well-known/api-catalog', { key: null }) },
  { operation: 'getApiCatalog', declared: 304, why: 'If-None-Match with its ETag', send: () => revalidate(served, '/.well-known/api-catalog') },
  { operation: 'getApiCatalog', declared: 503, why: 'the gateway is at capacity', send: () => send(crowded, 'GET', '/.well-known/api-catalog', { key: null }) },
];

describeContract('the gateway', document, CASES);
