// The admin listener's edge, byte for byte: Error bodies with an X-Request-Id for every refusal, its timeouts and its connection cap.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { parseResponses, sendRaw, startRecordingUpstream, type RecordingUpstream } from '../helpers/raw-socket.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startEdge, type Edge } from '../helpers/start-edge.ts';

/** Small enough that the tests below reach it with a few sockets. */
const MAX_CONNECTIONS = 20;
/** Hang detection only: every wait below ends on its event. */
const HANG_MS = 10_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let upstream: RecordingUpstream;
let edge: Edge;

beforeAll(async () => {
  upstream = await startRecordingUpstream((_req, res) => res.writeHead(200, { 'Content-Length': '2' }).end('[]'));
  edge = await startEdge(upstream.baseUrl, {
    listen: { adminMaxConnections: MAX_CONNECTIONS, adminHeadersTimeoutMs: 300, adminRequestTimeoutMs: 600, adminKeepAliveTimeoutMs: 200 },
  });
});
afterAll(async () => {
  await edge.close();
  await upstream.close();
});

function adminRefusal(text: string) {
  const responses = parseResponses(text);
  expect(responses).toHaveLength(1);
  const [response] = responses;
  expect(response!.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(response!.headers['x-request-id']).toMatch(UUID);
  return JSON.parse(response!.body) as unknown;
}

describe('refusals on the admin listener', () => {
  it('answers both Content-Length and Transfer-Encoding with a 400 Error body and an X-Request-Id, and closes', async () => {
    const answer = await sendRaw(
      edge.running.adminPort,
      'POST /admin/keys HTTP/1.1\r\nHost: admin\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    );
    expect(answer.statuses).toEqual([400]);
    expect(answer.closed).toBe(true);
    expect(adminRefusal(answer.text)).toEqual({ code: 'invalid_request', message: 'The request is not valid HTTP/1.1', status: 400 });
  });

  it('answers a 20 KB header with a 431 Error body and an X-Request-Id', async () => {
    const answer = await sendRaw(edge.running.adminPort, `GET /metrics HTTP/1.1\r\nHost: admin\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(answer.statuses).toEqual([431]);
    expect(adminRefusal(answer.text)).toEqual({
      code: 'header_fields_too_large',
      message: 'Request headers are larger than the gateway accepts',
      status: 431,
    });
  });

  it('answers CONNECT with a 400 Error body and an X-Request-Id, and closes', async () => {
    const answer = await sendRaw(edge.running.adminPort, 'CONNECT upstream.example:443 HTTP/1.1\r\nHost: upstream.example:443\r\n\r\n');
    expect(answer.statuses).toEqual([400]);
    expect(answer.closed).toBe(true);
    expect(adminRefusal(answer.text)).toEqual({ code: 'invalid_request', message: 'CONNECT is not served: the gateway is not a proxy', status: 400 });
  });

  it('refuses a target with a fragment with 400 invalid_request', async () => {
    const answer = await sendRaw(edge.running.adminPort, 'GET /readyz#now HTTP/1.1\r\nHost: admin\r\n\r\n', { responses: 1 });
    expect(answer.statuses).toEqual([400]);
    expect(adminRefusal(answer.text)).toEqual({ code: 'invalid_request', message: 'The request target must not carry a fragment (#)', status: 400 });
  });

  it('refuses an HTTP/1.1 request without Host with an Error body, not Node bare 400', async () => {
    const answer = await sendRaw(edge.running.adminPort, 'GET /healthz HTTP/1.1\r\n\r\n', { responses: 1 });
    expect(answer.statuses).toEqual([400]);
    expect(adminRefusal(answer.text)).toEqual({
      code: 'invalid_request',
      message: 'An HTTP/1.1 request must carry a Host header naming a host and optional port',
      status: 400,
    });
  });

  it('answers an expectation other than 100-continue 417 with an Error body, not Node bare 417', async () => {
    const answer = await sendRaw(edge.running.adminPort, 'GET /healthz HTTP/1.1\r\nHost: admin\r\nExpect: teapot\r\n\r\n', { responses: 1 });
    expect(answer.statuses).toEqual([417]);
    expect(adminRefusal(answer.text)).toEqual({
      code: 'expectation_failed',
      message: "The expectation 'teapot' cannot be met; only 100-continue is supported",
      status: 417,
    });
  });
});

describe('answers on the admin listener', () => {
  it("carry the caller's well-formed X-Request-Id", async () => {
    const answer = await sendRaw(edge.running.adminPort, 'GET /healthz HTTP/1.1\r\nHost: admin\r\nX-Request-Id: probe-0001\r\n\r\n', { responses: 1 });
    expect(answer.statuses).toEqual([200]);
    expect(parseResponses(answer.text)[0]!.headers['x-request-id']).toBe('probe-0001');
  });

  it('serve an absolute-form target as its path', async () => {
    const answer = await sendRaw(edge.running.adminPort, 'GET http://admin.example/healthz HTTP/1.1\r\nHost: admin\r\n\r\n', { responses: 1 });
    expect(answer.statuses).toEqual([200]);
    expect(parseResponses(answer.text)[0]!.body).toBe('{"status":"alive"}');
  });
});

describe('admin timeouts', () => {
  it('close an idle keep-alive connection after listen.adminKeepAliveTimeoutMs', async () => {
    const answer = await sendRaw(edge.running.adminPort, 'GET /healthz HTTP/1.1\r\nHost: admin\r\n\r\n', { waitMs: HANG_MS });
    expect(answer.statuses).toEqual([200]);
    expect(answer.closed).toBe(true);
  });

  it('answer a head not sent within listen.adminHeadersTimeoutMs 408 with an Error body, and close', async () => {
    const answer = await sendRaw(edge.running.adminPort, 'GET /healthz HTTP/1.1\r\nHost: adm', { waitMs: HANG_MS });
    expect(answer.statuses).toEqual([408]);
    expect(answer.closed).toBe(true);
    expect(adminRefusal(answer.text)).toEqual({ code: 'request_timeout', message: 'The request was not received in time', status: 408 });
  });
});

describe('the admin connection cap (listen.adminMaxConnections)', () => {
  it('closes the oldest half-sent connections to admit newcomers, so /readyz keeps answering', async () => {
    const sockets: Socket[] = [];
    let closed = 0;
    for (let i = 0; i < MAX_CONNECTIONS * 3; i++) {
      const socket = connect(edge.running.adminPort, '127.0.0.1');
      socket.on('error', () => {});
      socket.on('close', () => closed++);
      await once(socket, 'connect');
      socket.write('GET /readyz HTTP/1.1\r\nHost: adm');
      sockets.push(socket);
    }
    try {
      // Every one beyond the cap made room by closing an older one.
      await waitFor(async () => closed === MAX_CONNECTIONS * 2, HANG_MS);
      expect(sockets.slice(0, MAX_CONNECTIONS * 2).every((socket) => socket.destroyed)).toBe(true);
      const ready = await fetch(`http://127.0.0.1:${edge.running.adminPort}/readyz`);
      expect(ready.status).toBe(200);
      // The probe's own connection made room too: the oldest half-sent one left.
      await waitFor(async () => closed === MAX_CONNECTIONS * 2 + 1, HANG_MS);
      expect(sockets[MAX_CONNECTIONS * 2]!.destroyed).toBe(true);
      // Read in process: a scrape over the admin port would open (and count) a connection of its own.
      const exposition = parseExposition(await edge.gateway.scrape());
      const evicted = seriesKey('petstore_gateway_admin_connections_evicted_total', { environment: edge.gateway.config.environment });
      expect(exposition.get(evicted)).toBe(MAX_CONNECTIONS * 2 + 1);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});
