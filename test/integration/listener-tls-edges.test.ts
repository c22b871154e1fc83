// The HTTPS listeners' edge: refusals over TLS byte for byte, handshakes that never finish, the admin connection cap over TLS.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request as httpsRequest } from 'node:https';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import type { EdgeTransport } from '../helpers/edge-transport.ts';
import { parseResponses, sendRaw } from '../helpers/raw-socket.ts';
import { createTestPki, type IssuedCertificate, type TestAuthority, type TestPki } from '../helpers/test-certificates.ts';
import { curl, handshake } from '../helpers/tls-peers.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../../support/start-upstream.ts';

/** Hang detection only: every wait below ends on its event. */
const HANG_MS = 10_000;

let pki: TestPki;
let ca: TestAuthority;
let pair: IssuedCertificate;
let upstream: ScriptedUpstream;

beforeAll(async () => {
  pki = createTestPki();
  ca = pki.authority('edge-ca');
  pair = ca.issue({ name: 'edge-listener' });
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

/** Both listeners over TLS with the same pair, and `listen` settings laid over. */
async function listening(listen: Record<string, unknown> = {}): Promise<{ gateway: TestGateway; port: number; adminPort: number }> {
  const files = { certFile: pair.certFile, keyFile: pair.keyFile };
  const gateway = buildTestGateway({
    upstreamUrl: upstream.baseUrl,
    env: { PORT: '0', ADMIN_PORT: '0' },
    overrides: { listen: { tls: files, adminTls: files, ...listen } },
  });
  const running = await gateway.listen();
  stop = () => running.shutdown('test over');
  return { gateway, port: running.port, adminPort: running.adminPort };
}

/** The raw-socket helper's TLS, trusting this file's authority (the listener's pair is issued by it). */
const overTls = (): EdgeTransport => ({
  name: 'tls',
  proto: 'https',
  env: () => ({}),
  connect: (port, ready) => connectTls({ host: '127.0.0.1', port, servername: 'localhost', ca: ca.cert }, ready),
});

/** A TCP connection that sends nothing: no ClientHello. Resolves with how long the listener let it stay. */
async function silentConnection(port: number): Promise<number> {
  const socket = connectTcp(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const opened = Date.now();
  await Promise.race([once(socket, 'close'), new Promise((resolve) => setTimeout(resolve, HANG_MS))]);
  socket.destroy();
  return Date.now() - opened;
}

describe('refusals over TLS', () => {
  it('answers Content-Length with Transfer-Encoding with a 400 Error body and closes, as over plain HTTP', async () => {
    const { port } = await listening();
    const answer = await sendRaw(port, 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', {
      transport: overTls(),
    });
    const responses = parseResponses(answer.text);
    expect(responses.map((response) => response.status)).toEqual([400]);
    expect(responses[0]!.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(responses[0]!.body)).toEqual({ code: 'invalid_request', message: 'The request is not valid HTTP/1.1', status: 400 });
    expect(answer.closed).toBe(true);
  });

  it('serves two pipelined requests on one TLS connection, in order', async () => {
    const { gateway, port } = await listening();
    const request = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gateway.apiKey}\r\n\r\n`;
    const answer = await sendRaw(port, `${request}${request.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')}`, { transport: overTls() });
    expect(parseResponses(answer.text).map((response) => [response.status, response.body])).toEqual([
      [200, '[]'],
      [200, '[]'],
    ]);
  });
});

describe('a connection that never finishes its handshake', () => {
  it.each(['public', 'admin'] as const)('is closed by the %s listener within its headers timeout', async (listener) => {
    const { port, adminPort } = await listening({ headersTimeoutMs: 500, adminHeadersTimeoutMs: 500 });
    const lasted = await silentConnection(listener === 'public' ? port : adminPort);
    expect(lasted).toBeGreaterThanOrEqual(400);
    expect(lasted).toBeLessThan(3000);
  });

  it('leaves the public listener serving after many refused handshakes (plain HTTP to the TLS port), under its connection cap', async () => {
    const { gateway, port } = await listening({ maxConnections: 5 });
    for (let i = 0; i < 20; i++) {
      const socket = connectTcp(port, '127.0.0.1', () => socket.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gateway.apiKey}\r\n\r\n`));
      socket.on('error', () => undefined);
      // Read, or the listener's 400 in the clear would sit unread and hold the close back (tls-edge.test.ts checks its bytes).
      socket.resume();
      await once(socket, 'close');
    }
    expect(await curl(port, '/v1/pets', { caFile: ca.certFile, apiKey: gateway.apiKey })).toMatchObject({ status: 200, body: '[]' });
  });
});

describe('the admin connection cap over TLS (listen.adminMaxConnections)', () => {
  it('closes the oldest idle or half-sent TLS connections to admit a probe, so /healthz keeps answering', async () => {
    const cap = 5;
    const { gateway, adminPort } = await listening({ adminMaxConnections: cap });
    const sockets: Socket[] = [];
    let closed = 0;
    try {
      // Half of them never send a ClientHello, half finish the handshake and send half a request.
      for (let i = 0; i < cap * 2; i++) {
        const socket: Socket =
          i % 2 === 0 ? connectTcp(adminPort, '127.0.0.1') : connectTls({ host: '127.0.0.1', port: adminPort, servername: 'localhost', ca: ca.cert });
        socket.on('error', () => undefined);
        socket.on('close', () => closed++);
        await once(socket, i % 2 === 0 ? 'connect' : 'secureConnect');
        if (i % 2 === 1) socket.write('GET /healthz HTTP/1.1\r\nHost: adm');
        sockets.push(socket);
      }
      await waitFor(async () => closed === cap, HANG_MS);
      const probe = await curl(adminPort, '/healthz', { caFile: ca.certFile });
      expect(probe).toMatchObject({ status: 200, contentType: 'application/json; charset=utf-8' });
      expect(JSON.parse(probe.body)).toEqual({ status: 'alive' });
      const evicted = seriesKey('petstore_gateway_admin_connections_evicted_total', { environment: 'production' });
      expect(parseExposition(await gateway.scrape()).get(evicted)).toBeGreaterThanOrEqual(cap + 1);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});

describe('a graceful shutdown over TLS', () => {
  it('closes idle keep-alive TLS connections at once, lets the request in flight finish, and ends before the grace period', async () => {
    let release: (() => void) | undefined;
    const slow = await startScriptedUpstream((req, res) => {
      const answer = () => res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('[]');
      if (req.url === '/v1/pets?limit=7') release = answer;
      else answer();
    });
    const files = { certFile: pair.certFile, keyFile: pair.keyFile };
    const gateway = buildTestGateway({ upstreamUrl: slow.baseUrl, env: { PORT: '0', ADMIN_PORT: '0' }, overrides: { listen: { tls: files } } });
    const running = await gateway.listen();
    stop = async () => {
      await running.shutdown('test over');
      await slow.close();
    };
    // Two agents: one agent would send the held request on the idle connection.
    const idleAgent = new Agent({ keepAlive: true, ca: ca.cert });
    const busyAgent = new Agent({ keepAlive: true, ca: ca.cert });
    try {
      const get = (path: string, agent: Agent) =>
        new Promise<{ status: number; socket: Socket }>((resolve, reject) => {
          const req = httpsRequest(
            { host: '127.0.0.1', port: running.port, servername: 'localhost', path, agent, headers: { Authorization: `Bearer ${gateway.apiKey}` } },
            (res) => {
              // Taken now: a response's socket is detached when it goes back to the agent's pool.
              const socket = res.socket;
              res.resume();
              res.on('end', () => resolve({ status: res.statusCode ?? 0, socket }));
            },
          );
          req.on('error', reject);
          req.end();
        });
      // One keep-alive connection left idle, one carrying a request the backend holds.
      const idle = await get('/v1/pets', idleAgent);
      const idleClosed = once(idle.socket, 'close');
      const held = get('/v1/pets?limit=7', busyAgent);
      await waitFor(async () => release !== undefined, HANG_MS);

      const started = Date.now();
      const stopping = running.shutdown('test');
      await idleClosed;
      release!();
      expect((await held).status).toBe(200);
      await stopping;
      expect(Date.now() - started).toBeLessThan(gateway.config.shutdown.gracePeriodMs);
      expect(gateway.logs.some((line) => line.msg === 'grace period over: remaining connections closed')).toBe(false);
    } finally {
      idleAgent.destroy();
      busyAgent.destroy();
    }
  });
});

describe('petstore_gateway_tls_handshake_failures_total', () => {
  const REASONS = ['plain_http', 'timeout', 'protocol_version', 'no_shared_cipher', 'certificate_refused', 'reset', 'other'] as const;
  type Reason = (typeof REASONS)[number];

  /** A client that fails its handshake with the listener at `port` in one way. */
  const clients: Record<Exclude<Reason, 'other'>, (port: number) => Promise<unknown>> = {
    plain_http: async (port) => {
      const socket = connectTcp(port, '127.0.0.1', () => socket.write('GET /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n'));
      socket.on('error', () => undefined);
      // Read, or the listener's 400 in the clear would sit unread and hold the close back.
      socket.resume();
      await once(socket, 'close');
    },
    timeout: (port) => silentConnection(port),
    protocol_version: (port) => handshake(port, { ca: ca.cert, minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' }),
    // RSA key exchange: a TLS 1.2 suite outside the listener's forward-secret list.
    no_shared_cipher: (port) => handshake(port, { ca: ca.cert, maxVersion: 'TLSv1.2', ciphers: 'AES128-SHA256:AES256-GCM-SHA384' }),
    // curl verifies in OpenSSL and tells the server why with an alert (unknown_ca); Node's client only hangs up.
    certificate_refused: (port) =>
      new Promise((resolve) => {
        const stranger = pki.authority('edge-stranger-ca');
        execFile('curl', ['--silent', '--cacert', stranger.certFile, '--resolve', `localhost:${port}:127.0.0.1`, `https://localhost:${port}/v1/pets`], resolve);
      }),
    reset: async (port) => {
      const socket = connectTcp(port, '127.0.0.1');
      socket.on('error', () => undefined);
      await once(socket, 'connect');
      // The first bytes of a ClientHello record, then a reset.
      socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.resetAndDestroy();
      await once(socket, 'close');
    },
  };

  it.each(Object.keys(clients) as Array<keyof typeof clients>)('counts a handshake failed by %s on the public listener, and nothing else', async (reason) => {
    const { gateway, port } = await listening({ headersTimeoutMs: 300 });
    await clients[reason](port);
    const series = (name: Reason) =>
      seriesKey('petstore_gateway_tls_handshake_failures_total', { listener: 'listener', reason: name, environment: 'production' });
    await waitFor(async () => parseExposition(await gateway.scrape()).get(series(reason)) === 1, HANG_MS, 20);
    const exposition = parseExposition(await gateway.scrape());
    expect(Object.fromEntries(REASONS.map((name) => [name, exposition.get(series(name))]))).toEqual(
      Object.fromEntries(REASONS.map((name) => [name, name === reason ? 1 : 0])),
    );
  });
});

describe('plain HTTP sent to a TLS listener', () => {
  /** nginx's "plain HTTP request was sent to HTTPS port", as an Error body: byte for byte, then the close. */
  const ANSWER =
    'HTTP/1.1 400 invalid request\r\n' +
    'Content-Type: application/json; charset=utf-8\r\n' +
    'Content-Length: 113\r\n' +
    'Connection: close\r\n\r\n' +
    '{"code":"invalid_request","message":"A plain HTTP request was sent to the HTTPS port: use https://","status":400}';

  it.each(['public', 'admin'] as const)('is answered 400 with an Error body in the clear by the %s listener, then closed', async (listener) => {
    const { port, adminPort } = await listening();
    const target = listener === 'public' ? 'GET /v1/pets HTTP/1.1' : 'GET /healthz HTTP/1.1';
    const answer = await sendRaw(listener === 'public' ? port : adminPort, `${target}\r\nHost: localhost\r\n\r\n`, { waitMs: HANG_MS });
    expect(answer).toEqual({ text: ANSWER, statuses: [400], closed: true });
  });
});
