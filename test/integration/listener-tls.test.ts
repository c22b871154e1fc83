// The HTTPS listeners (public and admin) against real TLS clients: curl with the CA, the protocol versions and options the policy allows.
import { connect, createServer as createTlsServer, type ConnectionOptions, type TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { createTestPki, type IssuedCertificate, type TestAuthority, type TestPki } from '../helpers/test-certificates.ts';
import { curl, fingerprintOf, handshake, notAfterSeconds } from '../helpers/tls-peers.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../../support/start-upstream.ts';

const ENVIRONMENT = { environment: 'production' } as const;

let pki: TestPki;
let ca: TestAuthority;
let listenerPair: IssuedCertificate;
let adminPair: IssuedCertificate;
let upstream: ScriptedUpstream;

beforeAll(async () => {
  pki = createTestPki();
  ca = pki.authority('listener-ca');
  listenerPair = ca.issue({ name: 'listener', days: 30 });
  adminPair = ca.issue({ name: 'admin', days: 45 });
  upstream = await startScriptedUpstream((_req, res) => res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('[]'));
});
afterAll(async () => {
  await upstream.close();
  pki.remove();
});

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

/** A listening gateway with `listen` overrides (tls, adminTls); both ports chosen by the system. */
async function listening(listen: Record<string, unknown>): Promise<{ gateway: TestGateway; port: number; adminPort: number }> {
  const gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { PORT: '0', ADMIN_PORT: '0' }, overrides: { listen } });
  const running = await gateway.listen();
  stop = () => running.shutdown('test over');
  return { gateway, port: running.port, adminPort: running.adminPort };
}

const publicTls = () => ({ tls: { certFile: listenerPair.certFile, keyFile: listenerPair.keyFile } });

describe('the public listener with TLS_CERT_FILE and TLS_KEY_FILE', () => {
  it('serves curl trusting the CA: the proxied answer, 200', async () => {
    const { gateway, port } = await listening(publicTls());
    const answer = await curl(port, '/v1/pets', { caFile: ca.certFile, apiKey: gateway.apiKey });
    expect(answer).toMatchObject({ status: 200, contentType: 'application/json', body: '[]' });
  });

  it("answers a refusal over TLS with the gateway's Error body (401 without a key)", async () => {
    const { port } = await listening(publicTls());
    const answer = await curl(port, '/v1/pets', { caFile: ca.certFile });
    expect(answer.status).toBe(401);
    expect(answer.contentType).toBe('application/json; charset=utf-8');
    expect(JSON.parse(answer.body)).toEqual({ code: 'unauthorized', message: expect.any(String), status: 401 });
  });

  it.each([
    ['TLSv1.2', ['--tlsv1.2', '--tls-max', '1.2']],
    ['TLSv1.3', ['--tlsv1.3', '--tls-max', '1.3']],
  ])('accepts %s', async (version, args) => {
    const { gateway, port } = await listening(publicTls());
    const answer = await curl(port, '/v1/pets', { caFile: ca.certFile, apiKey: gateway.apiKey, args });
    expect(answer).toMatchObject({ status: 200, protocol: version });
  });

  it('refuses TLS 1.1 with a protocol_version alert (a client that can speak it, as a server allowing it shows)', async () => {
    // OpenSSL's default security level will not offer TLS 1.1 at all: level 0 makes a client that really offers it.
    const legacy: ConnectionOptions = { ca: ca.cert, minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' };
    const permissive = createTlsServer({ cert: listenerPair.cert, key: listenerPair.key, minVersion: 'TLSv1', ciphers: 'DEFAULT@SECLEVEL=0' }, (socket) =>
      socket.end(),
    );
    await new Promise<void>((resolve) => permissive.listen(0, '127.0.0.1', resolve));
    try {
      expect(await handshake((permissive.address() as AddressInfo).port, legacy)).toMatchObject({ ok: true, protocol: 'TLSv1.1' });
    } finally {
      permissive.close();
    }
    const { port } = await listening(publicTls());
    expect(await handshake(port, legacy)).toMatchObject({ ok: false, code: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' });
  });

  it('offers http/1.1 by ALPN, not h2', async () => {
    const { port } = await listening(publicTls());
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const made = connect({ host: '127.0.0.1', port, servername: 'localhost', ca: ca.cert, ALPNProtocols: ['h2', 'http/1.1'] }, () => resolve(made));
      made.on('error', reject);
    });
    expect(socket.alpnProtocol).toBe('http/1.1');
    socket.destroy();
  });

  it('refuses a client-initiated renegotiation (TLS 1.2), which a default Node server would allow', async () => {
    const renegotiate = (port: number) =>
      new Promise<string>((resolve) => {
        const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', ca: ca.cert, maxVersion: 'TLSv1.2' }, () => {
          socket.renegotiate({}, (error) => {
            socket.destroy();
            resolve(error ? 'refused' : 'renegotiated');
          });
          // Application data makes the client read the server's answer to its renegotiation request.
          socket.write('GET /v1/pets HTTP/1.1\r\nHost: localhost\r\n\r\n');
        });
        socket.on('error', (error: NodeJS.ErrnoException) => {
          socket.destroy();
          resolve(/no renegotiation/.test(error.message) ? 'refused' : `error ${error.code}: ${error.message}`);
        });
      });
    const plain = createTlsServer({ cert: listenerPair.cert, key: listenerPair.key }, (socket) => socket.on('data', () => socket.write('x')));
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    try {
      expect(await renegotiate((plain.address() as AddressInfo).port)).toBe('renegotiated');
    } finally {
      plain.close();
    }
    const { port } = await listening(publicTls());
    expect(await renegotiate(port)).toBe('refused');
  });

  it("exports the listener certificate's notAfter as the listener expiry series", async () => {
    const { gateway } = await listening(publicTls());
    const series = parseExposition(await gateway.scrape());
    expect(series.get(seriesKey('petstore_gateway_tls_certificate_expiry_timestamp_seconds', { role: 'listener', ...ENVIRONMENT }))).toBe(
      notAfterSeconds(listenerPair.cert),
    );
    expect(series.has(seriesKey('petstore_gateway_tls_certificate_expiry_timestamp_seconds', { role: 'admin', ...ENVIRONMENT }))).toBe(false);
  });

  it('serves the listener certificate to a new connection', async () => {
    const { port } = await listening(publicTls());
    expect(await handshake(port, { ca: ca.cert })).toMatchObject({ ok: true, fingerprint: fingerprintOf(listenerPair.cert) });
  });
});

describe('the admin listener with ADMIN_TLS_CERT_FILE and ADMIN_TLS_KEY_FILE', () => {
  it('serves /healthz over HTTPS with its own certificate, and exports its expiry as the admin series', async () => {
    const { gateway, adminPort } = await listening({ adminTls: { certFile: adminPair.certFile, keyFile: adminPair.keyFile } });
    const answer = await curl(adminPort, '/healthz', { caFile: ca.certFile });
    expect(answer).toMatchObject({ status: 200, contentType: 'application/json; charset=utf-8' });
    expect(JSON.parse(answer.body)).toEqual({ status: 'alive' });
    expect(await handshake(adminPort, { ca: ca.cert })).toMatchObject({ ok: true, fingerprint: fingerprintOf(adminPair.cert) });
    const series = parseExposition(await gateway.scrape());
    expect(series.get(seriesKey('petstore_gateway_tls_certificate_expiry_timestamp_seconds', { role: 'admin', ...ENVIRONMENT }))).toBe(
      notAfterSeconds(adminPair.cert),
    );
    expect(series.has(seriesKey('petstore_gateway_tls_certificate_expiry_timestamp_seconds', { role: 'listener', ...ENVIRONMENT }))).toBe(false);
  });
});

describe('the environment variables', () => {
  it('TLS_CERT_FILE and TLS_KEY_FILE, ADMIN_TLS_CERT_FILE and ADMIN_TLS_KEY_FILE make both listeners HTTPS', async () => {
    const gateway = buildTestGateway({
      upstreamUrl: upstream.baseUrl,
      env: {
        PORT: '0',
        ADMIN_PORT: '0',
        TLS_CERT_FILE: listenerPair.certFile,
        TLS_KEY_FILE: listenerPair.keyFile,
        ADMIN_TLS_CERT_FILE: adminPair.certFile,
        ADMIN_TLS_KEY_FILE: adminPair.keyFile,
      },
    });
    const running = await gateway.listen();
    stop = () => running.shutdown('test over');
    expect(await curl(running.port, '/v1/pets', { caFile: ca.certFile, apiKey: gateway.apiKey })).toMatchObject({ status: 200, body: '[]' });
    expect(await handshake(running.adminPort, { ca: ca.cert })).toMatchObject({ ok: true, fingerprint: fingerprintOf(adminPair.cert) });
  });

  it('TLS_CERT_FILE without TLS_KEY_FILE is a configuration error that names TLS_KEY_FILE', () => {
    expect(() => buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { TLS_CERT_FILE: listenerPair.certFile } })).toThrow(/TLS_KEY_FILE/);
  });
});

describe('a bad pair at start-up', () => {
  it.each([
    ['a certificate file that does not parse', () => ({ certFile: pki.write('garbage.pem', 'not a certificate\n'), keyFile: listenerPair.keyFile })],
    ['a key that does not match the certificate', () => ({ certFile: listenerPair.certFile, keyFile: adminPair.keyFile })],
  ])('stops the gateway from listening: %s', async (_case, pair) => {
    let gateway: TestGateway | undefined;
    const start = async () => {
      gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { PORT: '0', ADMIN_PORT: '0' }, overrides: { listen: { tls: pair() } } });
      const running = await gateway.listen();
      stop = () => running.shutdown('test over');
    };
    await expect(start()).rejects.toThrow(/TLS_CERT_FILE|TLS_KEY_FILE|listen\.tls/);
    await gateway?.close();
  });
});
