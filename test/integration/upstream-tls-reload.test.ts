// Upstream TLS material changed by a reload: new requests use it at once, a request in flight finishes on its old connection.
import { Agent as HttpAgent, request as httpRequest, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { createTestPki, type IssuedCertificate, type TestAuthority, type TestPki } from '../helpers/test-certificates.ts';
import { createSecretVolume } from '../helpers/secret-volume.ts';
import { fingerprintOf, notAfterSeconds, startOpensslServer, startTlsUpstream, type TlsUpstream } from '../helpers/tls-peers.ts';
import { waitFor } from '../../support/start-gateway-process.ts';

const ENVIRONMENT = { environment: 'production' } as const;
// Enough for every request of a load loop: a 429 would be a failure the test did not mean to cause.
const UNLIMITED = { rateLimit: { limits: { production: { default: 1_000_000 }, staging: { default: 1_000_000 } } } };
const expiry = (role: string) => seriesKey('petstore_gateway_tls_certificate_expiry_timestamp_seconds', { role, ...ENVIRONMENT });
const reloads = (result: 'success' | 'failure') => seriesKey('petstore_gateway_config_reloads_total', { result, ...ENVIRONMENT });
const freeConnections = seriesKey('petstore_gateway_upstream_pool_connections', { base_path: '/v1', state: 'free', ...ENVIRONMENT });
const tlsErrors = (kind: string) => seriesKey('petstore_gateway_upstream_errors_total', { operation: 'listPets', kind, ...ENVIRONMENT });

let pki: TestPki;
let backendCa: TestAuthority;
let clientCa: TestAuthority;
let backend: IssuedCertificate;
let clientFirst: IssuedCertificate;
let clientSecond: IssuedCertificate;

beforeAll(() => {
  pki = createTestPki();
  backendCa = pki.authority('backend-ca');
  clientCa = pki.authority('client-ca');
  backend = backendCa.issue({ name: 'backend', days: 25 });
  // Different lifetimes: the upstream_client series tells which one the gateway holds.
  clientFirst = clientCa.issue({ name: 'client-first', days: 30 });
  clientSecond = clientCa.issue({ name: 'client-second', days: 60 });
});
afterAll(() => pki.remove());

let upstream: TlsUpstream | undefined;
let gateway: TestGateway | undefined;
let closeServer: (() => Promise<void>) | undefined;
afterEach(async () => {
  await gateway?.close();
  await upstream?.close();
  await closeServer?.();
  gateway = undefined;
  upstream = undefined;
  closeServer = undefined;
});

function listPets(target: TestGateway) {
  return request(target.app).get('/v1/pets').set('Authorization', `Bearer ${target.apiKey}`);
}

async function scrape(target: TestGateway): Promise<Map<string, number>> {
  return parseExposition(await target.scrape());
}

/** The backend closes its idle connections, and the gateway's pool has seen them go: its next request opens a new one. */
async function dropIdleConnections(backendUnderTest: TlsUpstream, target: TestGateway): Promise<void> {
  backendUnderTest.closeIdleConnections();
  await waitFor(async () => (await scrape(target)).get(freeConnections) === 0, 5000, 10);
}

/** A gateway whose reload reads `next()` (the start's settings when absent) for the running environment's upstreamTls. */
function reloadable(upstreamUrl: string, start: Record<string, unknown>, next: () => Record<string, unknown> = () => start): TestGateway {
  gateway = buildTestGateway({
    upstreamUrl,
    overrides: { upstreamTls: { production: start } },
    reloadOverrides: () => ({ upstreamTls: { production: next() } }),
  });
  return gateway;
}

describe('a reload that replaces the client certificate files in place', () => {
  it('sends new requests with the new certificate on new connections, while the request in flight finishes on its own', async () => {
    let hold: ServerResponse | undefined;
    upstream = await startTlsUpstream({
      cert: backend.cert,
      key: backend.key,
      ca: clientCa.cert,
      requestCert: true,
      handler: (_req, res) => {
        // The first request is held (a slow answer); the others are answered at once.
        if (upstream?.seen.length === 1) hold = res;
        else res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('[]');
      },
    });
    const live = { certFile: pki.write('live-client.pem', clientFirst.cert), keyFile: pki.write('live-client.key', clientFirst.key) };
    const target = reloadable(upstream.baseUrl, { caFile: backendCa.certFile, ...live });

    const inFlight = listPets(target).then((answer) => answer);
    await waitFor(async () => hold !== undefined, 5000, 5);
    pki.write('live-client.key', clientSecond.key);
    pki.write('live-client.pem', clientSecond.cert);
    expect(await target.reload()).toMatchObject({ result: 'success' });

    expect((await listPets(target)).status).toBe(200);
    hold!.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('[]');
    const held = await inFlight;
    expect(held.status).toBe(200);
    expect(held.body).toEqual([]);
    // After the held request is done its connection is idle: a new request must not be sent on it, with the old certificate.
    expect((await listPets(target)).status).toBe(200);

    const [first, second, third] = upstream.seen;
    expect(first!.clientCertificate).toBe(fingerprintOf(clientFirst.cert));
    expect(second!.clientCertificate).toBe(fingerprintOf(clientSecond.cert));
    expect(third!.clientCertificate).toBe(fingerprintOf(clientSecond.cert));
    expect(second!.remotePort).not.toBe(first!.remotePort);
    expect(third!.remotePort).not.toBe(first!.remotePort);
    expect((await scrape(target)).get(expiry('upstream_client'))).toBe(notAfterSeconds(clientSecond.cert));
    // The retired pool closes its connection once its request is answered (well before any keep-alive timeout of 4 s or more):
    // reloads do not pile up idle connections.
    await waitFor(async () => upstream!.closedPorts.has(first!.remotePort), 1500, 20);
    expect(upstream.closedPorts.has(second!.remotePort)).toBe(false);
  });
});

describe('a reload under load that replaces the client certificate', () => {
  it('fails no request: connections in use finish, new ones carry the new certificate', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key, ca: clientCa.cert, requestCert: true });
    const live = { certFile: pki.write('live-load.pem', clientFirst.cert), keyFile: pki.write('live-load.key', clientFirst.key) };
    gateway = buildTestGateway({
      upstreamUrl: upstream.baseUrl,
      env: { PORT: '0', ADMIN_PORT: '0' },
      overrides: { upstreamTls: { production: { caFile: backendCa.certFile, ...live } }, ...UNLIMITED },
    });
    const target = gateway;
    const running = await target.listen();
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 4 });
    const failures: string[] = [];
    let answered = 0;
    let looping = true;
    const loop = async () => {
      while (looping) {
        try {
          const status = await new Promise<number>((resolve, reject) => {
            const req = httpRequest(
              { host: '127.0.0.1', port: running.port, path: '/v1/pets', agent, headers: { Authorization: `Bearer ${target.apiKey}` } },
              (res) => {
                res.resume();
                res.on('end', () => resolve(res.statusCode ?? 0));
              },
            );
            req.on('error', reject);
            req.end();
          });
          if (status !== 200) failures.push(`status ${status}`);
          answered++;
        } catch (error) {
          failures.push(error instanceof Error ? error.message : String(error));
        }
      }
    };
    const loops = Array.from({ length: 4 }, loop);
    try {
      await waitFor(async () => answered >= 40, 10_000, 10);
      pki.write('live-load.key', clientSecond.key);
      pki.write('live-load.pem', clientSecond.cert);
      expect(await target.reload()).toMatchObject({ result: 'success' });
      const before = answered;
      await waitFor(
        async () => answered >= before + 40 && upstream!.seen.some((seen) => seen.clientCertificate === fingerprintOf(clientSecond.cert)),
        10_000,
        10,
      );
    } finally {
      looping = false;
      await Promise.all(loops);
      agent.destroy();
      await running.shutdown('test over');
    }
    expect(failures).toEqual([]);
    const certificates = upstream.seen.map((seen) => seen.clientCertificate);
    // After the new certificate is first seen, the old one only on requests already admitted before the swap (one per loop at most).
    const firstNew = certificates.indexOf(fingerprintOf(clientSecond.cert));
    expect(certificates.slice(firstNew).filter((fingerprint) => fingerprint === fingerprintOf(clientFirst.cert)).length).toBeLessThanOrEqual(4);
    expect(certificates.slice(-10)).toEqual(Array.from({ length: 10 }, () => fingerprintOf(clientSecond.cert)));
  });
});

describe('a reload pointing at other files', () => {
  it('reaches a backend that now trusts only a new client authority, which refused the gateway before', async () => {
    const newClientCa = pki.authority('client-ca-new');
    const renewed = newClientCa.issue({ name: 'client-renewed' });
    // OpenSSL's own server: it tells a refused client certificate with an alert (a Node server only hangs up).
    const server = await startOpensslServer({
      certFile: backend.certFile,
      keyFile: backend.keyFile,
      caFile: newClientCa.certFile,
      version: 'TLSv1.3',
    });
    closeServer = server.close;
    let settings: Record<string, unknown> = { caFile: backendCa.certFile, certFile: clientFirst.certFile, keyFile: clientFirst.keyFile };
    const target = reloadable(server.baseUrl, settings, () => settings);

    const before = await listPets(target);
    expect(before.status).toBe(502);
    expect(before.body).toEqual({ code: 'upstream_tls_failed', message: "The pet store backend refused the gateway's client certificate (TLS)", status: 502 });
    settings = { caFile: backendCa.certFile, certFile: renewed.certFile, keyFile: renewed.keyFile };
    expect(await target.reload()).toMatchObject({ result: 'success', changed: expect.arrayContaining([expect.stringMatching(/^upstreamTls/)]) });

    // s_server -www answers any GET with its status page: reached is what counts.
    expect((await listPets(target)).status).toBe(200);
  });
});

describe('a reload that stops offering a client certificate', () => {
  it('removes the upstream_client expiry series: a series exists only for a certificate the gateway holds', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key });
    let settings: Record<string, unknown> = { caFile: backendCa.certFile, certFile: clientFirst.certFile, keyFile: clientFirst.keyFile };
    const target = reloadable(upstream.baseUrl, settings, () => settings);
    expect((await scrape(target)).get(expiry('upstream_client'))).toBe(notAfterSeconds(clientFirst.cert));
    settings = { caFile: backendCa.certFile };
    expect(await target.reload()).toMatchObject({ result: 'success' });
    expect((await scrape(target)).has(expiry('upstream_client'))).toBe(false);
    expect((await listPets(target)).status).toBe(200);
  });
});

describe("a reload after the backend's certificate moved to a new authority", () => {
  it('is refused as untrusted until a reload reads the CA bundle that now holds the new authority', async () => {
    const newBackendCa = pki.authority('backend-ca-new');
    const moved = newBackendCa.issue({ name: 'backend-moved', days: 70 });
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key });
    const caFile = pki.write('live-ca.pem', backendCa.cert);
    const target = reloadable(upstream.baseUrl, { caFile });
    expect((await listPets(target)).status).toBe(200);
    expect((await scrape(target)).get(expiry('upstream_server'))).toBe(notAfterSeconds(backend.cert));

    upstream.setSecureContext({ cert: moved.cert, key: moved.key });
    await dropIdleConnections(upstream, target);
    const refused = await listPets(target);
    expect(refused.status).toBe(502);
    expect(refused.body).toEqual({
      code: 'upstream_tls_failed',
      message: 'The pet store backend presented a certificate from an authority the gateway does not trust (TLS)',
      status: 502,
    });
    expect((await scrape(target)).get(tlsErrors('tls_untrusted'))).toBe(1);

    // The bundle holds both authorities through the change, as an operator rolling a CA would ship it.
    pki.write('live-ca.pem', `${backendCa.cert}${newBackendCa.cert}`);
    expect(await target.reload()).toMatchObject({ result: 'success' });
    expect((await listPets(target)).status).toBe(200);
    expect((await scrape(target)).get(expiry('upstream_server'))).toBe(notAfterSeconds(moved.cert));
  });
});

describe('a reload with a client key that does not match its certificate', () => {
  it('is refused, counted, and the running material keeps reaching the backend', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key, ca: clientCa.cert, requestCert: true });
    const live = { certFile: pki.write('live-mismatch.pem', clientFirst.cert), keyFile: pki.write('live-mismatch.key', clientFirst.key) };
    const target = reloadable(upstream.baseUrl, { caFile: backendCa.certFile, ...live });
    expect((await listPets(target)).status).toBe(200);

    pki.write('live-mismatch.pem', clientSecond.cert);
    expect(await target.reload()).toMatchObject({ result: 'failure', reason: expect.stringMatching(/UPSTREAM_TLS_(CERT|KEY)_FILE|upstreamTls/) });
    expect((await scrape(target)).get(reloads('failure'))).toBe(1);

    await dropIdleConnections(upstream, target);
    expect((await listPets(target)).status).toBe(200);
    expect(upstream.seen.map((seen) => seen.clientCertificate)).toEqual([fingerprintOf(clientFirst.cert), fingerprintOf(clientFirst.cert)]);
  });
});

describe('the certificate watch (certificates.watchIntervalMs)', () => {
  it('sends the client certificate replaced on disk with new requests, without a reload being asked', async () => {
    upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key, ca: clientCa.cert, requestCert: true });
    const volume = createSecretVolume(join(pki.dir, 'client-secret'), { 'tls.crt': clientFirst.cert, 'tls.key': clientFirst.key, 'ca.crt': backendCa.cert });
    gateway = buildTestGateway({
      upstreamUrl: upstream.baseUrl,
      overrides: {
        upstreamTls: { production: { caFile: volume.path('ca.crt'), certFile: volume.path('tls.crt'), keyFile: volume.path('tls.key') } },
        certificates: { watchIntervalMs: 200 },
      },
    });
    const target = gateway;
    expect((await listPets(target)).status).toBe(200);
    volume.update({ 'tls.crt': clientSecond.cert, 'tls.key': clientSecond.key, 'ca.crt': backendCa.cert });
    await waitFor(async () => (await scrape(target)).get(expiry('upstream_client')) === notAfterSeconds(clientSecond.cert), 5000, 50);
    expect((await listPets(target)).status).toBe(200);
    expect(upstream.seen.at(-1)!.clientCertificate).toBe(fingerprintOf(clientSecond.cert));
  });
});
