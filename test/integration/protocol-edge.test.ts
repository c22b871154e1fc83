// The protocol edge, byte for byte: exact bytes from a client socket, exact bytes at the upstream, exact answers back, over TCP and TLS.
import type { Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { edgeTransports } from '../helpers/edge-transport.ts';
import {
  parseResponses,
  sendRaw as sendRawOver,
  startRawUpstream,
  startReadingUpstream,
  startRecordingUpstream,
  type RawSendOptions,
  type RecordingUpstream,
} from '../helpers/raw-socket.ts';
import { startEdge as startEdgeOver, type Edge } from '../helpers/start-edge.ts';

const PET = '{"name":"Nibbles","categoryId":4}';
/**
 * How long a test waits for a close or a count of answers it expects: hang detection, never a time
 * window the assertion depends on (each such wait ends on the event; a loaded machine only makes it later).
 */
const HANG_MS = 15_000;

/** The createPet answer a real backend gives, so the exchange completes. */
function answerCreated(req: { method: string }, res: import('node:http').ServerResponse): void {
  const body = req.method === 'POST' ? '{"id":9,"name":"Nibbles","categoryId":4}' : '[]';
  res.writeHead(req.method === 'POST' ? 201 : 200, { 'Content-Type': 'application/json', 'Content-Length': String(body.length) });
  res.end(body);
}

const transports = edgeTransports();
afterAll(() => transports.remove());

// Every guarantee here is the HTTP edge's, whatever carries the bytes: the same bytes and the same assertions over a TLS socket to
// an HTTPS listener, but the scheme the gateway reports upstream (Forwarded proto=, X-Forwarded-Proto).
describe.each(transports.all)('over $name', (transport) => {
  const sendRaw = (port: number, bytes: string | Buffer, options: RawSendOptions = {}) => sendRawOver(port, bytes, { ...options, transport });
  const startEdge = (upstreamUrl: string, overrides: Record<string, unknown> = {}) => startEdgeOver(upstreamUrl, overrides, undefined, transport);

  let upstream: RecordingUpstream;
  let edge: Edge;
  let key: string;

  beforeAll(async () => {
    upstream = await startRecordingUpstream(answerCreated);
    edge = await startEdge(upstream.baseUrl, { requests: { maxBodyBytes: 1024 } });
    key = edge.gateway.apiKey;
  });
  afterAll(async () => {
    await edge.close();
    await upstream.close();
  });

  function errorOf(text: string): unknown {
    const [response] = parseResponses(text).filter((r) => r.status >= 200);
    return response ? JSON.parse(response.body) : undefined;
  }

  describe('Expect: 100-continue', () => {
    it('is answered 100 once the request passed every check, and the upstream gets the same headers and body as without it', async () => {
      const before = upstream.requests.length;
      const head =
        'POST /v1/pets HTTP/1.1\r\nHost: gw.example\r\n' +
        `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${PET.length}\r\n` +
        'Expect: 100-continue\r\nX-Request-Id: trace-expect-0001\r\nConnection: keep-alive\r\n\r\n';
      const answer = await sendRaw(edge.running.port, head, { afterFirstResponse: PET, responses: 1 });
      expect(answer.statuses).toEqual([100, 201]);
      expect(answer.text.startsWith('HTTP/1.1 100 Continue\r\n\r\n')).toBe(true);
      expect(upstream.requests.length).toBe(before + 1);
      // With no traceparent from the client, the gateway starts a trace (test/integration/tracing.test.ts).
      const sent = upstream.connections.at(-1)!;
      expect(sent).toMatch(/\r\ntraceparent: 00-[0-9a-f]{32}-[0-9a-f]{16}-00\r\n/);
      expect(sent.replace(/traceparent: [^\r]*\r\n/, '')).toBe(
        'POST /v1/pets HTTP/1.1\r\n' +
          `host: 127.0.0.1:${upstream.port}\r\n` +
          'connection: keep-alive\r\n' +
          'content-type: application/json\r\n' +
          'x-request-id: trace-expect-0001\r\n' +
          'x-forwarded-for: 127.0.0.1\r\n' +
          `x-forwarded-proto: ${transport.proto}\r\n` +
          'x-forwarded-host: gw.example\r\n' +
          `forwarded: for=127.0.0.1;proto=${transport.proto};host="gw.example"\r\n` +
          'x-real-ip: 127.0.0.1\r\n' +
          `content-length: ${PET.length}\r\n\r\n` +
          PET,
      );
    });

    it('is never answered 100 for an unauthenticated request: 401 at once, and the connection closes', async () => {
      const before = upstream.requests.length;
      const answer = await sendRaw(
        edge.running.port,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${PET.length}\r\nExpect: 100-continue\r\n\r\n`,
      );
      expect(answer.statuses).toEqual([401]);
      expect(answer.closed).toBe(true);
      expect(parseResponses(answer.text)[0]!.headers.connection).toBe('close');
      expect(upstream.requests.length).toBe(before);
    });

    it('is never answered 100 for a body declared over the limit: 413 at once', async () => {
      const answer = await sendRaw(
        edge.running.port,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n`,
      );
      expect(answer.statuses).toEqual([413]);
      expect(answer.closed).toBe(true);
      expect(errorOf(answer.text)).toEqual({ code: 'payload_too_large', message: 'Request body is larger than the gateway accepts', status: 413 });
    });

    it('is never answered 100 for a media type the operation does not take: 415', async () => {
      const answer = await sendRaw(
        edge.running.port,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`,
      );
      expect(answer.statuses).toEqual([415]);
    });

    it('answers another expectation 417 with an Error body', async () => {
      const answer = await sendRaw(edge.running.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nExpect: 200-ok\r\n\r\n`, {
        responses: 1,
      });
      expect(answer.statuses).toEqual([417]);
      expect(parseResponses(answer.text)[0]!.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(errorOf(answer.text)).toEqual({
        code: 'expectation_failed',
        message: "The expectation '200-ok' cannot be met; only 100-continue is supported",
        status: 417,
      });
    });
  });

  describe('framing headers the upstream receives', () => {
    it('keeps Content-Length, Host and Content-Type whatever the client lists in Connection', async () => {
      const before = upstream.requests.length;
      const answer = await sendRaw(
        edge.running.port,
        'POST /v1/pets HTTP/1.1\r\nHost: x\r\n' +
          `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${PET.length}\r\n` +
          'Connection: content-length, transfer-encoding, host, content-type, x-request-id\r\n\r\n' +
          PET,
        { responses: 1 },
      );
      expect(answer.statuses).toEqual([201]);
      const received = upstream.requests[before]!;
      expect(received.headers['content-length']).toBe(String(PET.length));
      expect(received.headers['content-type']).toBe('application/json');
      expect(received.headers.host).toBe(`127.0.0.1:${upstream.port}`);
      expect(received.body.toString('latin1')).toBe(PET);
      expect(upstream.requests.length).toBe(before + 1);
    });

    it("sends a chunked body with the Content-Length of its bytes and never the client's Transfer-Encoding", async () => {
      const before = upstream.requests.length;
      const half = PET.length >> 1;
      const chunked = `${half.toString(16)}\r\n${PET.slice(0, half)}\r\n${(PET.length - half).toString(16)}\r\n${PET.slice(half)}\r\n0\r\n\r\n`;
      const answer = await sendRaw(
        edge.running.port,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}`,
        { responses: 1 },
      );
      expect(answer.statuses).toEqual([201]);
      const raw = upstream.connections.at(-1)!;
      expect(raw).toContain(`content-length: ${PET.length}\r\n`);
      expect(raw.toLowerCase()).not.toContain('transfer-encoding');
      expect(upstream.requests[before]!.body.toString('latin1')).toBe(PET);
    });

    it('drops headers that ask a backend to re-route, and rebuilds the client address headers from the socket', async () => {
      const before = upstream.requests.length;
      await sendRaw(
        edge.running.port,
        'GET /v1/pets HTTP/1.1\r\nHost: x\r\n' +
          `Authorization: Bearer ${key}\r\n` +
          'X-Original-URL: /admin\r\nX-Rewrite-URL: /admin\r\nX-HTTP-Method-Override: DELETE\r\n' +
          'Forwarded: for=10.9.8.7\r\nX-Real-IP: 10.9.8.7\r\nX-Forwarded-For: 10.9.8.7\r\n\r\n',
        { responses: 1 },
      );
      const received = upstream.requests[before]!;
      expect(received.headers['x-original-url']).toBeUndefined();
      expect(received.headers['x-rewrite-url']).toBeUndefined();
      expect(received.headers['x-http-method-override']).toBeUndefined();
      expect(received.method).toBe('GET');
      expect(received.headers['x-real-ip']).toBe('127.0.0.1');
      expect(received.headers['x-forwarded-for']).toBe('10.9.8.7, 127.0.0.1');
      expect(received.headers.forwarded).toBe(`for=10.9.8.7, for=127.0.0.1;proto=${transport.proto};host="x"`);
      expect(received.headers.authorization).toBeUndefined();
    });
  });

  describe('one response per request', () => {
    it.each([
      ['a refused key (401)', 'POST /v1/pets', 'Authorization: Bearer psk_live_nope\r\n', 401],
      ['an unknown path (404)', 'POST /v2/pets', '', 404],
      ['an unknown method (405)', 'PUT /v1/pets/1', `Authorization: Bearer ${'KEY'}\r\n`, 405],
    ])('after %s, a body that then fails to parse gets no second answer', async (_name, line, auth, status) => {
      const answer = await sendRaw(
        edge.running.port,
        `${line} HTTP/1.1\r\nHost: x\r\n${auth.replace('KEY', key)}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
        // The rest of the body arrives after the answer: Node's parser rejects the chunk extension's space.
        { afterFirstResponse: '5 ;a=1\r\nhello\r\n0\r\n\r\n', waitMs: HANG_MS },
      );
      expect(answer.statuses).toEqual([status]);
    });
  });

  describe('bytes that do not parse after complete requests', () => {
    const get = (limit: number) =>
      `GET /v1/pets?limit=${limit} HTTP/1.1\r\nHost: x\r\nX-Request-Id: garbage-after-${limit}\r\nAuthorization: Bearer ${key}\r\n\r\n`;
    const NOT_HTTP = { code: 'invalid_request', message: 'The request is not valid HTTP/1.1', status: 400 };

    it('answer the complete request first, then refuse the bytes with 400 and close', async () => {
      const before = upstream.requests.length;
      const answer = await sendRaw(edge.running.port, `${get(1)}garbage\r\n\r\n`);
      expect(answer.statuses).toEqual([200, 400]);
      expect(answer.closed).toBe(true);
      const [first, refusal] = parseResponses(answer.text);
      expect(first!.headers['x-request-id']).toBe('garbage-after-1');
      expect(refusal!.headers.connection).toBe('close');
      expect(JSON.parse(refusal!.body)).toEqual(NOT_HTTP);
      expect(upstream.requests.slice(before).map((request) => request.url)).toEqual(['/v1/pets?limit=1']);
    });

    it('answer every pipelined request before them, in order', async () => {
      const before = upstream.requests.length;
      const answer = await sendRaw(edge.running.port, `${get(1)}${get(2)}${get(3)}\x01\x02 not http\r\n\r\n`);
      expect(answer.statuses).toEqual([200, 200, 200, 400]);
      expect(parseResponses(answer.text).map((response) => response.headers['x-request-id'])).toEqual([
        'garbage-after-1',
        'garbage-after-2',
        'garbage-after-3',
        undefined,
      ]);
      expect(answer.closed).toBe(true);
      expect(upstream.requests.slice(before).map((request) => request.url)).toEqual(['/v1/pets?limit=1', '/v1/pets?limit=2', '/v1/pets?limit=3']);
    });

    it('arriving while the request before them is at the upstream, answer it first', async () => {
      let client: Socket | undefined;
      // The upstream holds its answer until the bad bytes have been written after the request.
      const held = await startReadingUpstream((request) => {
        client!.write('garbage\r\n\r\n', () =>
          setTimeout(() => request.socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]'), 50),
        );
      });
      const through = await startEdge(held.baseUrl);
      try {
        const text = await new Promise<string>((resolve) => {
          let received = '';
          client = transport.connect(through.running.port, () =>
            client!.write(`GET /v1/pets?limit=5 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`),
          );
          client.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
          client.on('close', () => resolve(received));
        });
        expect(parseResponses(text).map((response) => response.status)).toEqual([200, 400]);
        expect(held.requests).toHaveLength(1);
      } finally {
        await through.close();
        await held.close();
      }
    });

    it("after a DELETE whose body was sent without a length (as Node's own client does), answer the DELETE and refuse its body", async () => {
      const answer = await sendRaw(
        edge.running.port,
        `DELETE /v1/pets/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n\r\n{"reason":"x"}`,
      );
      expect(answer.statuses).toEqual([405, 400]);
      expect(answer.closed).toBe(true);
    });
  });

  describe('a body still arriving when the gateway has answered', () => {
    it('closes the connection after a refusal, instead of reading whatever the client keeps sending', async () => {
      const head = 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
      const answer = await sendRaw(edge.running.port, head, { afterFirstResponse: `4000\r\n${'a'.repeat(0x4000)}\r\n`, waitMs: HANG_MS });
      expect(answer.statuses).toEqual([401]);
      expect(parseResponses(answer.text)[0]!.headers.connection).toBe('close');
      expect(answer.closed).toBe(true);
    });

    it('answers a chunked body that outgrows the limit 413 at the limit and closes the connection', async () => {
      const chunk = `400\r\n${'a'.repeat(0x400)}\r\n`;
      const answer = await sendRaw(
        edge.running.port,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunk}${chunk}`,
        { waitMs: HANG_MS },
      );
      expect(answer.statuses).toEqual([413]);
      expect(answer.closed).toBe(true);
    });

    it('closes the connection after a 417, so the next request is never read as the refused body', async () => {
      const answer = await sendRaw(
        edge.running.port,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${PET.length}\r\nExpect: x-wait\r\n\r\n`,
        { waitMs: HANG_MS },
      );
      expect(answer.statuses).toEqual([417]);
      expect(answer.closed).toBe(true);
    });
  });

  describe('a client that leaves before its request reaches the upstream', () => {
    it('is not sent upstream and does not count against the upstream', async () => {
      // A relay into a connection that is gone would never finish: it would end at the total timeout, as a failure.
      // The upstream holds each answer 50 ms, so every client has left before its first answer: a gateway that answered within the
      // client's millisecond would rightly serve the second request, to a client still there.
      const held = await startRecordingUpstream((req, res) => void setTimeout(() => answerCreated(req, res), 50));
      const slow = await startEdge(held.baseUrl, { upstream: { totalTimeoutMs: 300, circuitBreaker: { failureThreshold: 2, openMs: 60_000 } } });
      try {
        const before = held.requests.length;
        const twice = `GET /v1/pets?limit=3 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${slow.gateway.apiKey}\r\n\r\n`.repeat(2);
        // Written and abandoned at once, five times: the second request of each pair finds its connection gone.
        for (let i = 0; i < 5; i++) await sendRaw(slow.running.port, twice, { waitMs: 1 });
        await new Promise((resolve) => setTimeout(resolve, 600));
        const after = await sendRaw(slow.running.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${slow.gateway.apiKey}\r\n\r\n`, {
          responses: 1,
        });
        expect(after.statuses).toEqual([200]);
        expect(held.requests.length - before).toBeLessThanOrEqual(6);
        expect(await slow.gateway.scrape()).not.toMatch(/upstream_errors_total\{[^}]*\} [1-9]/);
      } finally {
        await slow.close();
        await held.close();
      }
    });
  });

  describe('a request shed at capacity', () => {
    it('closes a connection whose body is still arriving, rather than read the rest', async () => {
      let heldArrived: () => void = () => undefined;
      const heldAtUpstream = new Promise<void>((resolve) => (heldArrived = resolve));
      const held = await startRawUpstream(() => heldArrived());
      const full = await startEdge(held.baseUrl, { listen: { maxInFlight: 1 } });
      try {
        const holding = sendRaw(full.running.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${full.gateway.apiKey}\r\n\r\n`, {
          waitMs: 1500,
        });
        // The one place in flight is taken once the held request is at the upstream, unanswered.
        await heldAtUpstream;
        const shed = await sendRaw(
          full.running.port,
          `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${full.gateway.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{"nam`,
          { waitMs: HANG_MS },
        );
        expect(shed.statuses).toEqual([503]);
        expect(parseResponses(shed.text)[0]!.headers.connection).toBe('close');
        expect(shed.closed).toBe(true);
        await holding;
      } finally {
        await full.close();
        await held.close();
      }
    });
  });

  describe('pipelined requests during a drain', () => {
    it('are not sent upstream behind the response that closes the connection', async () => {
      // A is held at the upstream until B and C are written; B is answered at once.
      let aArrived: () => void = () => undefined;
      const aAtUpstream = new Promise<void>((resolve) => (aArrived = resolve));
      let releaseA: () => void = () => undefined;
      const aReleased = new Promise<void>((resolve) => (releaseA = resolve));
      const slow = await startRecordingUpstream((req, res) => {
        if (req.headers['x-request-id'] !== 'pipelined-a-0001') return answerCreated(req, res);
        aArrived();
        void aReleased.then(() => answerCreated(req, res));
      });
      const draining = await startEdge(slow.baseUrl, { shutdown: { drainDelayMs: 0, gracePeriodMs: 3000 } });
      try {
        const get = (id: string) =>
          `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${id}\r\nAuthorization: Bearer ${draining.gateway.apiKey}\r\n\r\n`;
        const socket = transport.connect(draining.running.port);
        let text = '';
        socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
        const closed = new Promise((resolve) => socket.on('close', resolve));
        socket.write(get('pipelined-a-0001'));
        await aAtUpstream;
        const stopping = draining.running.shutdown('test drain');
        // Written while A is still at the upstream and the gateway drains: B is answered (closing), C never runs.
        socket.write(get('pipelined-b-0002') + get('pipelined-c-0003'));
        // A is answered only after the gateway has had B and C to read (a wait that can only help).
        setTimeout(releaseA, 300);
        await closed;
        await stopping;
        expect([...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))).toEqual([200, 200]);
        expect(slow.requests.map((request) => request.headers['x-request-id'])).toEqual(['pipelined-a-0001', 'pipelined-b-0002']);
      } finally {
        await draining.gateway.close();
        await slow.close();
      }
    });
  });

  describe('declared body size', () => {
    it('answers a Content-Length over the limit 413 at once, before any of the body, and closes the connection', async () => {
      const answer = await sendRaw(
        edge.running.port,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"name":`,
        { waitMs: HANG_MS },
      );
      expect(answer.statuses).toEqual([413]);
      expect(answer.closed).toBe(true);
      expect(errorOf(answer.text)).toEqual({ code: 'payload_too_large', message: 'Request body is larger than the gateway accepts', status: 413 });
    });
  });

  describe('request line and Host', () => {
    it('serves HEAD on a GET operation like GET, without a body', async () => {
      const before = upstream.requests.length;
      const answer = await sendRaw(edge.running.port, `HEAD /v1/pets?limit=2 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`, { responses: 1 });
      expect(answer.statuses).toEqual([200]);
      expect(answer.text).toMatch(/\r\ncontent-length: 2\r\n/i);
      expect(answer.text.endsWith('\r\n\r\n')).toBe(true);
      expect(upstream.requests[before]).toMatchObject({ method: 'HEAD', url: '/v1/pets?limit=2' });
    });

    it('serves HEAD on the deprecated getPet with its Deprecation and Sunset headers', async () => {
      const answer = await sendRaw(edge.running.port, `HEAD /v1/pets/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`, { responses: 1 });
      expect(answer.statuses).toEqual([200]);
      expect(parseResponses(answer.text)[0]!.headers).toMatchObject({ deprecation: expect.stringMatching(/^@\d+$/), sunset: 'Thu, 05 Dec 2030 00:00:00 GMT' });
    });

    it('serves an absolute-form target as its path', async () => {
      const before = upstream.requests.length;
      const answer = await sendRaw(
        edge.running.port,
        `GET http://gw.example/v1/pets?limit=1 HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${key}\r\n\r\n`,
        {
          responses: 1,
        },
      );
      expect(answer.statuses).toEqual([200]);
      expect(upstream.requests[before]!.url).toBe('/v1/pets?limit=1');
    });

    it('refuses the asterisk form with an Error body', async () => {
      const answer = await sendRaw(edge.running.port, 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n', { responses: 1 });
      expect(answer.statuses).toEqual([400]);
      expect(errorOf(answer.text)).toEqual({ code: 'invalid_request', message: 'The request target must be a path', status: 400 });
    });

    it.each(['gw.example,for=6.6.6.6;proto=https', 'a\\', 'a b'])('refuses Host %j, which would forge the Forwarded chain', async (host) => {
      const before = upstream.requests.length;
      const answer = await sendRaw(edge.running.port, `GET /v1/pets HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\n\r\n`, { responses: 1 });
      expect(answer.statuses).toEqual([400]);
      expect(upstream.requests.length).toBe(before);
    });

    it('ignores Expect on an HTTP/1.0 request, as RFC 9110 says', async () => {
      const answer = await sendRaw(
        edge.running.port,
        `POST /v1/pets HTTP/1.0\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${PET.length}\r\nExpect: 100-continue\r\n\r\n${PET}`,
        { responses: 1 },
      );
      expect(answer.statuses).toEqual([201]);
    });

    it('refuses an HTTP/1.1 request without Host with an Error body', async () => {
      const answer = await sendRaw(edge.running.port, `GET /v1/pets HTTP/1.1\r\nAuthorization: Bearer ${key}\r\n\r\n`, { responses: 1 });
      expect(answer.statuses).toEqual([400]);
      expect(parseResponses(answer.text)[0]!.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(errorOf(answer.text)).toEqual({
        code: 'invalid_request',
        message: 'An HTTP/1.1 request must carry a Host header naming a host and optional port',
        status: 400,
      });
    });
  });

  describe('a pipelined flood on one connection', () => {
    let flooded: Edge;
    afterEach(async () => flooded?.close());

    const bogus = (count: number) => 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer psk_live_bogus\r\n\r\n'.repeat(count);

    it('is served one request at a time, so other clients are not shed', async () => {
      flooded = await startEdge(upstream.baseUrl, { listen: { maxInFlight: 10, maxQueuedPerConnection: 5000 } });
      const flood = sendRaw(flooded.running.port, bogus(3000), { responses: 3000, waitMs: 120_000 });
      const others = await Promise.all(
        Array.from({ length: 5 }, () =>
          sendRaw(flooded.running.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${flooded.gateway.apiKey}\r\n\r\n`, {
            responses: 1,
            waitMs: HANG_MS,
          }),
        ),
      );
      for (const other of others) expect(other.statuses).toEqual([200]);
      const answered = await flood;
      expect(answered.statuses.length).toBe(3000);
      expect(new Set(answered.statuses)).toEqual(new Set([401]));
    }, 180_000);

    it('closes a connection with more requests waiting than listen.maxQueuedPerConnection', async () => {
      flooded = await startEdge(upstream.baseUrl, { listen: { maxInFlight: 10, maxQueuedPerConnection: 16 } });
      const answer = await sendRaw(flooded.running.port, bogus(3000), { waitMs: HANG_MS });
      expect(answer.closed).toBe(true);
      expect(answer.statuses.length).toBeLessThan(3000);
      expect(answer.statuses.every((status) => status === 401)).toBe(true);
    });
  });

  describe('upstreams that do not answer as HTTP/1.1 should', () => {
    /** One authenticated GET through a gateway in front of an upstream that writes `bytes` and hangs up. */
    async function throughRawUpstream(bytes: string, hangUp: boolean): Promise<{ statuses: number[]; error: unknown; logs: string }> {
      const raw = await startRawUpstream((socket) => {
        socket.write(bytes);
        if (hangUp) socket.destroy();
      });
      const through = await startEdge(raw.baseUrl);
      try {
        const answer = await sendRaw(through.running.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`, {
          responses: 1,
        });
        // The access log line is written once the answer is on its way: over TLS the client may read it a moment before.
        await waitFor(async () => through.gateway.logs.some((entry) => entry.res !== undefined), 2000);
        return { statuses: answer.statuses, error: errorOf(answer.text), logs: through.gateway.rawLogs() };
      } finally {
        await through.close();
        await raw.close();
      }
    }

    it('relays a 204 without the Content-Length the upstream put on it', async () => {
      const raw = await startRawUpstream((socket) => socket.write('HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n'));
      const through = await startEdge(raw.baseUrl);
      try {
        const answer = await sendRaw(through.running.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`, {
          responses: 1,
        });
        expect(answer.statuses).toEqual([204]);
        expect(answer.text.toLowerCase()).not.toContain('content-length');
      } finally {
        await through.close();
        await raw.close();
      }
    });

    it('counts and logs a response it had to cut short as 502, not as a client that left', async () => {
      const raw = await startRawUpstream((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n[1'));
      const stalled = await startEdge(raw.baseUrl, { upstream: { timeoutMs: 300 } });
      try {
        const answer = await sendRaw(
          stalled.running.port,
          `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Request-Id: cut-short-0001\r\nAuthorization: Bearer ${stalled.gateway.apiKey}\r\n\r\n`,
          {
            waitMs: HANG_MS,
          },
        );
        expect(answer.statuses).toEqual([200]);
        expect(answer.closed).toBe(true);
        // The client sees the connection close a moment before the gateway completes the request.
        await waitFor(async () => stalled.gateway.logs.some((entry) => entry.reqId === 'cut-short-0001'), 2000);
        const series = parseExposition(await stalled.gateway.scrape());
        expect(
          series.get(seriesKey('petstore_gateway_requests_total', { operation: 'listPets', method: 'GET', status_code: '502', environment: 'production' })),
        ).toBe(1);
        const line = stalled.gateway.logs.find((entry) => entry.reqId === 'cut-short-0001');
        expect(line).toMatchObject({ level: 40, res: { statusCode: 502 }, upstreamFailure: 'idle_timeout' });
      } finally {
        await stalled.close();
        await raw.close();
      }
    });

    it.each([
      ['stays silent after its head', false, 504, { code: 'gateway_timeout', message: 'The pet store backend stopped sending its answer', status: 504 }],
      [
        'closes the connection after its head',
        true,
        502,
        { code: 'bad_gateway', message: 'The pet store backend closed the connection before answering', status: 502 },
      ],
    ])('answers an Error, not a head cut off by a close, when the upstream %s', async (_name, hangUp, status, error) => {
      const raw = await startRawUpstream((socket) => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: "v1"\r\nContent-Length: 10\r\n\r\n');
        if (hangUp) socket.end();
      });
      const through = await startEdge(raw.baseUrl, { upstream: { timeoutMs: 300 } });
      try {
        const answer = await sendRaw(
          through.running.port,
          `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Request-Id: head-only-0001\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`,
          {
            responses: 1,
          },
        );
        expect(answer.statuses).toEqual([status]);
        const [response] = parseResponses(answer.text);
        expect(JSON.parse(response!.body)).toEqual(error);
        expect(response!.headers).toMatchObject({ 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'head-only-0001' });
        expect(response!.headers.etag).toBeUndefined();
      } finally {
        await through.close();
        await raw.close();
      }
    });

    it('answers 502 when the upstream switches protocols on a plain request', async () => {
      const { statuses, error } = await throughRawUpstream('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n', false);
      expect(statuses).toEqual([502]);
      expect(error).toEqual({ code: 'bad_gateway', message: 'The pet store backend answered with something other than an HTTP response', status: 502 });
    });

    it('answers 502 with an Error body when an error response is cut mid-body', async () => {
      const cut = 'HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"code":"boom",';
      const { statuses, error } = await throughRawUpstream(cut, true);
      expect(statuses).toEqual([502]);
      expect(error).toEqual({ code: 'bad_gateway', message: 'The pet store backend closed the connection before answering', status: 502 });
    });

    it('answers 502 when the upstream answers garbage, without logging its bytes', async () => {
      const { statuses, logs } = await throughRawUpstream('SSH-2.0-OpenSSH_9.2 secret-banner\r\n\r\n', true);
      expect(statuses).toEqual([502]);
      expect(logs).not.toContain('secret-banner');
      expect(logs).toContain('"upstreamFailure":"protocol"');
    });

    it('answers 502 protocol for a control character in a header value', async () => {
      const { statuses, error, logs } = await throughRawUpstream('HTTP/1.1 200 OK\r\nX-Bad: a\u0001b\r\nContent-Length: 2\r\n\r\n[]', false);
      expect(statuses).toEqual([502]);
      expect(error).toEqual({ code: 'bad_gateway', message: 'The pet store backend answered with something other than an HTTP response', status: 502 });
      expect(logs).toContain('"upstreamFailure":"protocol"');
    });
  });

  describe('repeated fields and pooled connections', () => {
    it('relays a repeated field the policy allows as Node reports it: the first of a single-valued one, every Set-Cookie, the rest joined', async () => {
      const raw = await startRawUpstream((socket) =>
        socket.write(
          'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Type: text/html\r\nLocation: /a\r\nLocation: /b\r\n' +
            'X-Tag: 1\r\nX-Tag: 2\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 2\r\n\r\n[]',
        ),
      );
      // Set-Cookie, Location and X-Tag are relayed only when configured (headers.relayToClient).
      const through = await startEdge(raw.baseUrl, { headers: { relayToClient: ['set-cookie', 'location', 'x-tag'] } });
      try {
        const answer = await sendRaw(through.running.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`, {
          responses: 1,
        });
        const head = answer.text.split('\r\n\r\n')[0]!.split('\r\n');
        expect(head.filter((line) => /^(content-type|location|x-tag|set-cookie):/i.test(line))).toEqual([
          'content-type: application/json',
          'location: /a',
          'x-tag: 1, 2',
          'set-cookie: a=1',
          'set-cookie: b=2',
        ]);
      } finally {
        await through.close();
        await raw.close();
      }
    });

    it('costs no upstream connection for a client that left while its request waited for one', async () => {
      const connections = new Set<unknown>();
      let requests = 0;
      let firstArrived: () => void = () => undefined;
      const firstAtUpstream = new Promise<void>((resolve) => (firstArrived = resolve));
      let releaseFirst: () => void = () => undefined;
      const firstReleased = new Promise<void>((resolve) => (releaseFirst = resolve));
      const raw = await startRawUpstream((socket) => {
        connections.add(socket);
        requests++;
        const answer = () => socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]');
        // The first answer is held, so the others queue for the only connection.
        if (requests === 1) {
          firstArrived();
          void firstReleased.then(answer);
        } else answer();
      });
      const through = await startEdge(raw.baseUrl, { upstream: { maxSockets: 1 } });
      const get = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`;
      const inFlight = async () =>
        parseExposition(await through.gateway.scrape()).get(seriesKey('petstore_gateway_in_flight_requests', { environment: 'production' }));
      try {
        const first = sendRaw(through.running.port, get, { responses: 1 });
        await firstAtUpstream;
        // Three clients that give up before a connection is free; the first is answered once the gateway has seen them go.
        await Promise.all([0, 1, 2].map(() => sendRaw(through.running.port, get, { waitMs: 100 })));
        await waitFor(async () => (await inFlight()) === 1);
        releaseFirst();
        expect((await first).statuses).toEqual([200]);
        expect((await sendRaw(through.running.port, get, { responses: 1 })).statuses).toEqual([200]);
        expect(requests).toBe(2);
        expect(connections.size).toBe(1);
      } finally {
        await through.close();
        await raw.close();
      }
    });
  });

  describe("the upstream's silences (upstream.timeoutMs)", () => {
    const OK_HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ';

    it('are timed from when the request is sent, not while it waits for a pooled connection', async () => {
      // Every answer comes 600 ms after its request; the second request waits those 600 ms for the only connection.
      const raw = await startRawUpstream((socket) => setTimeout(() => socket.write(`${OK_HEAD}2\r\n\r\n[]`), 600));
      const through = await startEdge(raw.baseUrl, { upstream: { maxSockets: 1, timeoutMs: 1000 } });
      const get = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`;
      try {
        const answers = await Promise.all([0, 1].map(() => sendRaw(through.running.port, get, { responses: 1, waitMs: HANG_MS })));
        expect(answers.map((answer) => answer.statuses)).toEqual([[200], [200]]);
      } finally {
        await through.close();
        await raw.close();
      }
    });

    it('end with every part of the answer: a body trickling in gaps shorter than the timeout is relayed whole', async () => {
      const body = '[1,2,3]';
      const raw = await startRawUpstream((socket) => {
        socket.write(`${OK_HEAD}${body.length}\r\n\r\n`);
        // One byte every 200 ms: 1.4 s in all, over the 1 s timeout.
        const bytes = [...body];
        const drip = setInterval(() => (bytes.length === 0 ? clearInterval(drip) : socket.write(bytes.shift()!)), 200);
        socket.on('close', () => clearInterval(drip));
      });
      const through = await startEdge(raw.baseUrl, { upstream: { timeoutMs: 1000 } });
      try {
        const answer = await sendRaw(through.running.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`, {
          responses: 1,
          waitMs: HANG_MS,
        });
        expect(answer.statuses).toEqual([200]);
        expect(parseResponses(answer.text)[0]!.body).toBe(body);
      } finally {
        await through.close();
        await raw.close();
      }
    });

    it('are not confused with a stall of the gateway itself: what the upstream sent meanwhile is read first', async () => {
      const raw = await startRawUpstream((socket) => {
        socket.write(`${OK_HEAD}2\r\n\r\n[]`);
        // The whole process (the gateway runs in it too) stalls past the timeout, the answer already sent.
        const until = Date.now() + 600;
        while (Date.now() < until);
      });
      const through = await startEdge(raw.baseUrl, { upstream: { timeoutMs: 300 } });
      try {
        const answer = await sendRaw(through.running.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`, {
          responses: 1,
          waitMs: HANG_MS,
        });
        expect(answer.statuses).toEqual([200]);
      } finally {
        await through.close();
        await raw.close();
      }
    });

    it('do not include a slow client: an upstream paused while the client does not read is not cut off', async () => {
      // More than the loopback socket buffers hold, so the gateway has to pause the upstream for the client.
      const size = 32 * 1024 * 1024;
      let upstreamSocket: Socket | undefined;
      const raw = await startRawUpstream((socket) => {
        upstreamSocket = socket;
        socket.write(Buffer.concat([Buffer.from(`${OK_HEAD}${size}\r\n\r\n`), Buffer.alloc(size, 0x20)]));
      });
      const through = await startEdge(raw.baseUrl, { upstream: { timeoutMs: 1000 } });
      const client = transport.connect(through.running.port);
      try {
        client.on('error', () => undefined); // a reset shows as a short body below
        client.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Request-Id: slow-reader-0001\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`);
        // Reads nothing for three times the upstream timeout, then everything.
        client.pause();
        await new Promise((resolve) => setTimeout(resolve, 3000));
        // The upstream was held back: part of its answer still waits in its socket.
        expect(upstreamSocket!.writableLength).toBeGreaterThan(0);
        // The head arrives in the first chunk (the gateway writes it before any of the body).
        let head = '';
        let bodyBytes = 0;
        await new Promise<void>((resolve) => {
          const deadline = setTimeout(resolve, 10_000);
          const done = () => {
            clearTimeout(deadline);
            resolve();
          };
          client.on('data', (chunk: Buffer) => {
            if (head === '') {
              const headEnd = chunk.indexOf('\r\n\r\n');
              head = chunk.toString('latin1', 0, headEnd + 4);
              bodyBytes += chunk.length - headEnd - 4;
            } else {
              bodyBytes += chunk.length;
            }
            if (bodyBytes >= size) done();
          });
          client.on('close', done);
          client.resume();
        });
        expect(head.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
        expect(bodyBytes).toBe(size);
        await waitFor(async () => through.gateway.logs.some((entry) => entry.reqId === 'slow-reader-0001'), 2000);
        const line = through.gateway.logs.find((entry) => entry.reqId === 'slow-reader-0001');
        expect(line).toMatchObject({ res: { statusCode: 200 } });
        expect(line).not.toHaveProperty('upstreamFailure');
      } finally {
        client.destroy();
        await through.close();
        await raw.close();
      }
    });
  });

  describe('upstream connections whose framing the gateway cannot vouch for', () => {
    /** A whole response, as a backend bug would leave it on the connection after a bodiless answer. */
    const INJECTED = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 22\r\n\r\n[{"injected":"late!"}]';

    /**
     * Client A's request is answered by `bodiless` (a HEAD's head, a 204, a 304); the moment the upstream
     * reads client B's request, on whichever connection, it writes INJECTED on A's connection, then
     * answers B with B's own query. A gateway that sent B on A's connection would give B the injected bytes.
     */
    async function aThenB(requestA: string, answerA: string, inject = true): Promise<{ answerA: number[]; bodyB: string; connections: number[] }> {
      const upstream = await startReadingUpstream((request, all) => {
        if (all.length === 1) {
          request.socket.write(answerA);
          return;
        }
        if (inject) all[0]!.socket.write(INJECTED);
        const body = JSON.stringify([{ query: request.target }]);
        request.socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      });
      const through = await startEdge(upstream.baseUrl);
      const otherKey = through.gateway.addKey({ id: 'key_other', consumer: 'other' });
      try {
        const a = await sendRaw(through.running.port, `${requestA} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${through.gateway.apiKey}\r\n\r\n`, {
          responses: 1,
        });
        const b = await sendRaw(through.running.port, `GET /v1/pets?limit=7 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${otherKey}\r\n\r\n`, {
          responses: 1,
        });
        return { answerA: a.statuses, bodyB: parseResponses(b.text)[0]?.body ?? '', connections: upstream.requests.map((request) => request.connection) };
      } finally {
        await through.close();
        await upstream.close();
      }
    }

    it('are not reused after a HEAD: body bytes a backend writes after its HEAD answer never reach the next client', async () => {
      const { answerA, bodyB, connections } = await aThenB(
        'HEAD /v1/pets?limit=1',
        `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${INJECTED.length}\r\n\r\n`,
      );
      expect(answerA).toEqual([200]);
      expect(bodyB).toBe('[{"query":"/v1/pets?limit=7"}]');
      expect(connections).toEqual([0, 1]);
    });

    it.each([
      ['204', 'HTTP/1.1 204 No Content\r\n\r\n'],
      ['304', 'HTTP/1.1 304 Not Modified\r\nETag: "a"\r\n\r\n'],
    ])('are not reused after a %s: bytes a backend writes after it never reach the next client', async (status, bodiless) => {
      const { answerA, bodyB, connections } = await aThenB('GET /v1/pets?limit=1', bodiless);
      expect(answerA).toEqual([Number(status)]);
      expect(bodyB).toBe('[{"query":"/v1/pets?limit=7"}]');
      expect(connections).toEqual([0, 1]);
    });

    it('are reused after an answer its Content-Length frames', async () => {
      const { bodyB, connections } = await aThenB(
        'GET /v1/pets?limit=1',
        'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]',
        false,
      );
      expect(bodyB).toBe('[{"query":"/v1/pets?limit=7"}]');
      expect(connections).toEqual([0, 0]);
    });
  });
});
