// TLS to the backend against real HTTPS peers: mutual TLS refused and accepted, each bad certificate a distinct counted 502, the breaker, the expiry gauges.
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { createTestPki, type IssuedCertificate, type TestAuthority, type TestPki } from '../helpers/test-certificates.ts';
import { fingerprintOf, issueNotYetValid, notAfterSeconds, startOpensslServer, startTlsUpstream, type TlsUpstream } from '../helpers/tls-peers.ts';
import { waitFor } from '../../support/start-gateway-process.ts';

const ENVIRONMENT = { environment: 'production' } as const;
const TLS_KINDS = ['tls_untrusted', 'tls_expired', 'tls_not_yet_valid', 'tls_wrong_name', 'tls_client_certificate_refused', 'tls_handshake'] as const;
type TlsKind = (typeof TLS_KINDS)[number];
const PINO_WARN = 40;
const V2_DOCUMENT = fileURLToPath(new URL('../fixtures/petstore-v2.openapi.yaml', import.meta.url));

let pki: TestPki;
/** Signs the backends' certificates. */
let backendCa: TestAuthority;
/** Signs the gateway's client certificate; the mTLS backend trusts it. */
let clientCa: TestAuthority;
/** An authority nobody here trusts. */
let otherCa: TestAuthority;
let backend: IssuedCertificate;
let gatewayClient: IssuedCertificate;
let strangerClient: IssuedCertificate;

beforeAll(() => {
  pki = createTestPki();
  backendCa = pki.authority('backend-ca');
  clientCa = pki.authority('client-ca');
  otherCa = pki.authority('other-ca');
  // Different lifetimes, so the two expiry series cannot be mistaken for one another.
  backend = backendCa.issue({ name: 'backend', days: 25 });
  gatewayClient = clientCa.issue({ name: 'gateway-client', days: 40 });
  strangerClient = otherCa.issue({ name: 'stranger-client' });
});
afterAll(() => pki.remove());

let upstream: TlsUpstream | undefined;
let gateway: TestGateway | undefined;
let closeExtra: (() => Promise<void>) | undefined;
afterEach(async () => {
  await gateway?.close();
  await upstream?.close();
  await closeExtra?.();
  gateway = undefined;
  upstream = undefined;
  closeExtra = undefined;
});

/** A gateway in front of `upstreamUrl` with the running environment's upstreamTls settings. */
function gatewayWith(upstreamUrl: string, upstreamTls: Record<string, unknown>, overrides: Record<string, unknown> = {}): TestGateway {
  gateway = buildTestGateway({ upstreamUrl, overrides: { upstreamTls: { production: upstreamTls }, ...overrides } });
  return gateway;
}

function listPets(target: TestGateway, requestId?: string) {
  const call = request(target.app).get('/v1/pets').set('Authorization', `Bearer ${target.apiKey}`);
  return requestId ? call.set('X-Request-Id', requestId) : call;
}

async function series(target: TestGateway): Promise<Map<string, number>> {
  return parseExposition(await target.scrape());
}

/** petstore_gateway_upstream_errors_total for listPets, for every TLS kind. */
async function tlsFailures(target: TestGateway): Promise<Record<TlsKind, number | undefined>> {
  const all = await series(target);
  return Object.fromEntries(
    TLS_KINDS.map((kind) => [kind, all.get(seriesKey('petstore_gateway_upstream_errors_total', { operation: 'listPets', kind, ...ENVIRONMENT }))]),
  ) as Record<TlsKind, number | undefined>;
}

/** Exactly one failure, of `kind` when given, and none of every other TLS kind (their series exist at 0). */
function counts(kind?: TlsKind): Record<TlsKind, number> {
  return Object.fromEntries(TLS_KINDS.map((each) => [each, each === kind ? 1 : 0])) as Record<TlsKind, number>;
}
const onlyOne = (kind: TlsKind) => counts(kind);

/** The Error's message for each kind: what an operator reads names the reason. */
const MESSAGES: Record<TlsKind, string> = {
  tls_untrusted: 'The pet store backend presented a certificate from an authority the gateway does not trust (TLS)',
  tls_expired: 'The pet store backend presented an expired certificate (TLS)',
  tls_not_yet_valid: 'The pet store backend presented a certificate that is not valid yet (TLS)',
  tls_wrong_name: 'The pet store backend presented a certificate issued for another name (TLS)',
  tls_client_certificate_refused: "The pet store backend refused the gateway's client certificate (TLS)",
  tls_handshake: 'The pet store backend could not agree a TLS connection with the gateway',
};

function expectTlsFailure(answer: request.Response, kind: TlsKind): void {
  expect(answer.status).toBe(502);
  expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(answer.body).toEqual({ code: 'upstream_tls_failed', message: MESSAGES[kind], status: 502 });
}

describe('a backend that requires a client certificate (mutual TLS)', () => {
  it('refuses a gateway without one over TLS 1.3 (alert certificate_required): 502 upstream_tls_failed, counted as tls_client_certificate_refused', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key, ca: clientCa.cert, requestCert: true, maxVersion: 'TLSv1.3' });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile });
    expectTlsFailure(await listPets(target), 'tls_client_certificate_refused');
    expect(await tlsFailures(target)).toEqual(onlyOne('tls_client_certificate_refused'));
    expect(upstream.seen).toHaveLength(0);
  });

  // TLS 1.2 has no certificate_required alert: the backend sends handshake_failure, which a version or
  // cipher mismatch sends too, so the gateway does not claim to know it was the certificate (decision 0024).
  it('refuses a gateway without one over TLS 1.2 (alert handshake_failure): 502 upstream_tls_failed, counted as tls_handshake', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key, ca: clientCa.cert, requestCert: true, maxVersion: 'TLSv1.2' });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile });
    expectTlsFailure(await listPets(target), 'tls_handshake');
    expect(await tlsFailures(target)).toEqual(onlyOne('tls_handshake'));
    expect(upstream.seen).toHaveLength(0);
  });

  it.each(['TLSv1.2', 'TLSv1.3'] as const)(
    'refuses a client certificate from an authority it does not trust (alert unknown_ca): tls_client_certificate_refused, not tls_untrusted (%s)',
    async (version) => {
      const server = await startOpensslServer({
        certFile: backend.certFile,
        keyFile: backend.keyFile,
        caFile: clientCa.certFile,
        version,
      });
      closeExtra = server.close;
      const target = gatewayWith(server.baseUrl, { caFile: backendCa.certFile, certFile: strangerClient.certFile, keyFile: strangerClient.keyFile });
      expectTlsFailure(await listPets(target), 'tls_client_certificate_refused');
      expect(await tlsFailures(target)).toEqual(onlyOne('tls_client_certificate_refused'));
    },
  );

  it('accepts the gateway with its client certificate and the answer is relayed', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key, ca: clientCa.cert, requestCert: true });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile, certFile: gatewayClient.certFile, keyFile: gatewayClient.keyFile });
    const answer = await listPets(target);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([]);
    expect(upstream.seen).toEqual([expect.objectContaining({ url: '/v1/pets', clientCertificate: fingerprintOf(gatewayClient.cert) })]);
    expect(await tlsFailures(target)).toEqual(counts());
  });
});

describe("the backend's certificate, checked by the gateway", () => {
  it('from an authority the CA file does not hold: 502, tls_untrusted', async () => {
    const foreign = otherCa.issue({ name: 'backend-foreign' });
    upstream = await startTlsUpstream({ cert: foreign.cert, key: foreign.key });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile });
    expectTlsFailure(await listPets(target), 'tls_untrusted');
    expect(await tlsFailures(target)).toEqual(onlyOne('tls_untrusted'));
  });

  it('self-signed: 502, tls_untrusted', async () => {
    const lone = pki.authority('backend-self-signed');
    upstream = await startTlsUpstream({ cert: lone.cert, key: lone.key });
    const target = gatewayWith(`https://127.0.0.1:${upstream.port}/v1`, { caFile: backendCa.certFile });
    expectTlsFailure(await listPets(target), 'tls_untrusted');
    expect(await tlsFailures(target)).toEqual(onlyOne('tls_untrusted'));
  });

  it('trusted by nobody when no CA file is set: verification is never off (502, tls_untrusted)', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key });
    gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl });
    expectTlsFailure(await listPets(gateway), 'tls_untrusted');
    expect(await tlsFailures(gateway)).toEqual(onlyOne('tls_untrusted'));
  });

  it('untrusted even under NODE_TLS_REJECT_UNAUTHORIZED=0: no setting, Node-wide ones included, switches verification off', async () => {
    const foreign = otherCa.issue({ name: 'backend-foreign-env' });
    upstream = await startTlsUpstream({ cert: foreign.cert, key: foreign.key });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile });
    const before = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      expectTlsFailure(await listPets(target), 'tls_untrusted');
    } finally {
      if (before === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = before;
    }
  });

  it('expired: 502, tls_expired', async () => {
    const expired = backendCa.issue({ name: 'backend-expired', days: -1 });
    upstream = await startTlsUpstream({ cert: expired.cert, key: expired.key });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile });
    expectTlsFailure(await listPets(target), 'tls_expired');
    expect(await tlsFailures(target)).toEqual(onlyOne('tls_expired'));
  });

  it('not valid yet: 502, tls_not_yet_valid', async () => {
    const early = issueNotYetValid(pki, backendCa, 'backend-early');
    upstream = await startTlsUpstream({ cert: early.cert, key: early.key });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile });
    expectTlsFailure(await listPets(target), 'tls_not_yet_valid');
    expect(await tlsFailures(target)).toEqual(onlyOne('tls_not_yet_valid'));
  });

  it("for another name than the URL's host: 502, tls_wrong_name", async () => {
    const named = backendCa.issue({ name: 'backend-named', dnsNames: ['backend.internal'], ipAddresses: [] });
    upstream = await startTlsUpstream({ cert: named.cert, key: named.key });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile });
    expectTlsFailure(await listPets(target), 'tls_wrong_name');
    expect(await tlsFailures(target)).toEqual(onlyOne('tls_wrong_name'));
  });

  it('for the name set as servername: sent as SNI, checked against it, and the answer relayed', async () => {
    const named = backendCa.issue({ name: 'backend-servername', dnsNames: ['backend.internal'], ipAddresses: [] });
    upstream = await startTlsUpstream({ cert: named.cert, key: named.key });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile, servername: 'backend.internal' });
    const answer = await listPets(target);
    expect(answer.status).toBe(200);
    expect(upstream.seen).toEqual([expect.objectContaining({ servername: 'backend.internal' })]);
  });

  it('set by the UPSTREAM_TLS_* environment variables for the running environment: mutual TLS and servername', async () => {
    const named = backendCa.issue({ name: 'backend-env', dnsNames: ['backend.internal'], ipAddresses: [] });
    upstream = await startTlsUpstream({ cert: named.cert, key: named.key, ca: clientCa.cert, requestCert: true });
    gateway = buildTestGateway({
      upstreamUrl: upstream.baseUrl,
      env: {
        UPSTREAM_TLS_CA_FILE: backendCa.certFile,
        UPSTREAM_TLS_CERT_FILE: gatewayClient.certFile,
        UPSTREAM_TLS_KEY_FILE: gatewayClient.keyFile,
        UPSTREAM_TLS_SERVERNAME: 'backend.internal',
      },
    });
    expect(gateway.config.upstreamTls.production).toMatchObject({
      caFile: backendCa.certFile,
      certFile: gatewayClient.certFile,
      keyFile: gatewayClient.keyFile,
      servername: 'backend.internal',
    });
    expect((await listPets(gateway)).status).toBe(200);
    expect(upstream.seen).toEqual([expect.objectContaining({ servername: 'backend.internal', clientCertificate: fingerprintOf(gatewayClient.cert) })]);
  });

  it('served over TLS 1.2 only, to a gateway whose minVersion is TLSv1.3: 502, tls_handshake', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key, maxVersion: 'TLSv1.2' });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile, minVersion: 'TLSv1.3' });
    expectTlsFailure(await listPets(target), 'tls_handshake');
    expect(await tlsFailures(target)).toEqual(onlyOne('tls_handshake'));
    expect(upstream.seen).toHaveLength(0);
  });

  it('absent: plain HTTP behind an https URL is 502, tls_handshake', async () => {
    const plain = createHttpServer((_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]'));
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    closeExtra = () => new Promise((resolve) => plain.close(() => resolve()));
    const target = gatewayWith(`https://localhost:${(plain.address() as AddressInfo).port}/v1`, { caFile: backendCa.certFile });
    expectTlsFailure(await listPets(target), 'tls_handshake');
    expect(await tlsFailures(target)).toEqual(onlyOne('tls_handshake'));
  });
});

describe('caMode, with the backend authority in Node’s default store (tls.setDefaultCACertificates)', () => {
  let defaults: string[];
  beforeAll(() => {
    defaults = getCACertificates('default');
    setDefaultCACertificates([...defaults, backendCa.cert]);
  });
  afterAll(() => setDefaultCACertificates(defaults));

  it('replace (the default): only the CA file is trusted, so a CA file without the backend authority refuses it (tls_untrusted)', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key });
    const target = gatewayWith(upstream.baseUrl, { caFile: otherCa.certFile });
    expectTlsFailure(await listPets(target), 'tls_untrusted');
    expect(await tlsFailures(target)).toEqual(onlyOne('tls_untrusted'));
  });

  it('add: the CA file and the default store are trusted, so the same backend is reached', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key });
    const target = gatewayWith(upstream.baseUrl, { caFile: otherCa.certFile, caMode: 'add' });
    expect((await listPets(target)).status).toBe(200);
  });
});

describe('a failed handshake', () => {
  it('is logged once, at warn, naming the reason as upstreamFailure', async () => {
    const expired = backendCa.issue({ name: 'backend-expired-log', days: -1 });
    upstream = await startTlsUpstream({ cert: expired.cert, key: expired.key });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile });
    expectTlsFailure(await listPets(target, 'tls-log-expired'), 'tls_expired');
    const lines = target.logs.filter((line) => line.reqId === 'tls-log-expired' && line.res !== undefined);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: PINO_WARN, res: { statusCode: 502 }, errorCode: 'upstream_tls_failed', upstreamFailure: 'tls_expired' });
    expect(JSON.stringify(lines[0])).not.toContain('stack');
  });

  it("counts as the backend's failure: the circuit opens after failureThreshold of them, then 503 upstream_unavailable without a handshake", async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key, ca: clientCa.cert, requestCert: true });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile }, { upstream: { circuitBreaker: { failureThreshold: 3, openMs: 60_000 } } });
    for (let i = 0; i < 3; i++) expectTlsFailure(await listPets(target), 'tls_client_certificate_refused');
    const connections = upstream.connections;
    const refused = await listPets(target);
    expect(refused.status).toBe(503);
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(refused.body).toEqual({ code: 'upstream_unavailable', message: 'The pet store backend is unavailable; retry shortly', status: 503 });
    expect(upstream.connections).toBe(connections);
    expect((await tlsFailures(target)).tls_client_certificate_refused).toBe(3);
    expect((await series(target)).get(seriesKey('petstore_gateway_upstream_circuit_open', ENVIRONMENT))).toBe(1);
  });
});

describe('petstore_gateway_tls_certificate_expiry_timestamp_seconds', () => {
  const expiry = (role: string) => seriesKey('petstore_gateway_tls_certificate_expiry_timestamp_seconds', { role, ...ENVIRONMENT });

  it("says the client certificate's notAfter (upstream_client) and, after a new connection, the backend's (upstream_server)", async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key, ca: clientCa.cert, requestCert: true });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile, certFile: gatewayClient.certFile, keyFile: gatewayClient.keyFile });
    expect((await series(target)).get(expiry('upstream_client'))).toBe(notAfterSeconds(gatewayClient.cert));
    expect((await listPets(target)).status).toBe(200);
    const after = await series(target);
    expect(after.get(expiry('upstream_server'))).toBe(notAfterSeconds(backend.cert));
    expect(after.get(expiry('upstream_client'))).toBe(notAfterSeconds(gatewayClient.cert));
    expect(after.has(expiry('listener'))).toBe(false);
  });

  it("follows the backend's renewed certificate on the next new connection, later notAfter included (no reload)", async () => {
    const renewed = backendCa.issue({ name: 'backend-renewed', days: 80 });
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key });
    const target = gatewayWith(upstream.baseUrl, { caFile: backendCa.certFile });
    expect((await listPets(target)).status).toBe(200);
    expect((await series(target)).get(expiry('upstream_server'))).toBe(notAfterSeconds(backend.cert));
    upstream.setSecureContext({ cert: renewed.cert, key: renewed.key });
    upstream.closeIdleConnections();
    const free = seriesKey('petstore_gateway_upstream_pool_connections', { base_path: '/v1', state: 'free', ...ENVIRONMENT });
    await waitFor(async () => (await series(target)).get(free) === 0, 5000, 10);
    expect((await listPets(target)).status).toBe(200);
    expect((await series(target)).get(expiry('upstream_server'))).toBe(notAfterSeconds(renewed.cert));
  });

  it('says the soonest notAfter when several https backends are reached (a second version beside v1)', async () => {
    const soon = backendCa.issue({ name: 'backend-v2-soon', days: 10 });
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key });
    const v2 = await startTlsUpstream({
      cert: soon.cert,
      key: soon.key,
      handler: (_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"id":1,"name":"Rex"}'),
    });
    closeExtra = v2.close;
    const v2Url = `https://localhost:${v2.port}/v2`;
    const target = gatewayWith(
      upstream.baseUrl,
      { caFile: backendCa.certFile },
      { versions: [{ document: V2_DOCUMENT, upstreams: { production: v2Url, staging: v2Url } }] },
    );
    // The soonest to expire is reached first: the later one seen after it must not hide it.
    expect((await request(target.app).get('/v2/animals/1').set('Authorization', `Bearer ${target.apiKey}`)).status).toBe(200);
    expect((await listPets(target)).status).toBe(200);
    expect((await series(target)).get(expiry('upstream_server'))).toBe(notAfterSeconds(soon.cert));
  });
});
