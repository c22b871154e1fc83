// The HTTPS listener's own edge, over real TLS sockets: plain HTTP on the TLS port, renegotiation, cut handshakes, close_notify, resets, half records.
import { once } from 'node:events';
import { connect as connectTcp, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../support/start-gateway-process.ts';
import { createTlsTransport, TCP } from '../helpers/edge-transport.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { PLAIN_HTTP_ANSWER } from '../helpers/plain-http-answer.ts';
import { parseResponses, sendRaw, startRecordingUpstream, type RecordingUpstream } from '../helpers/raw-socket.ts';
import { startEdge, type Edge } from '../helpers/start-edge.ts';
import { clientHello, openWire } from '../helpers/tls-wire.ts';

/** Hang detection only: each wait ends on the event it waits for. */
const HANG_MS = 15_000;

const tls = createTlsTransport();
let upstream: RecordingUpstream;
let edge: Edge;
let key: string;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  edge = await startEdge(upstream.baseUrl, {}, undefined, tls);
  key = edge.gateway.apiKey;
});
afterAll(async () => {
  await edge?.close();
  await upstream?.close();
  tls.remove();
});

const get = (id: string) => `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: gw.example\r\nX-Request-Id: ${id}\r\nAuthorization: Bearer ${key}\r\n\r\n`;
const postHead = (id: string, length: number) =>
  `POST /v1/pets HTTP/1.1\r\nHost: gw.example\r\nX-Request-Id: ${id}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

/** The request ids the upstream received, in order. */
const forwarded = () => upstream.requests.map((request) => request.headers['x-request-id']);

async function inFlight(): Promise<number | undefined> {
  return parseExposition(await edge.gateway.scrape()).get(seriesKey('petstore_gateway_in_flight_requests', { environment: 'production' }));
}

/** What every test ends with: nothing left in flight, no error of the gateway's own, and a new TLS client served as ever. */
async function stillServing(id: string): Promise<void> {
  await waitFor(async () => (await inFlight()) === 0, HANG_MS);
  const answer = await sendRaw(edge.running.port, get(id), { transport: tls, responses: 1 });
  expect(answer.statuses).toEqual([200]);
  expect(edge.gateway.logs.filter((line) => String(line.msg).startsWith('unexpected error'))).toEqual([]);
}

/** A keep-alive TLS connection that asks one request at a time and collects each answer. */
async function conversation(options: { maxVersion?: 'TLSv1.2' } = {}) {
  let text = '';
  let waiting: (() => void) | undefined;
  const socket = await new Promise<TLSSocket>((resolve) => {
    const opened = tls.connect(edge.running.port, () => resolve(opened as TLSSocket), options) as TLSSocket;
  });
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
    waiting?.();
  });
  const answers = () => parseResponses(text).filter((response) => response.body.length === Number(response.headers['content-length'] ?? 0));
  return {
    socket,
    /** Writes `bytes` and resolves with the status of the answer they get. */
    ask(bytes: string): Promise<number> {
      const before = answers().length;
      return new Promise((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms`)), HANG_MS);
        waiting = () => {
          const all = answers();
          if (all.length <= before) return;
          clearTimeout(deadline);
          waiting = undefined;
          resolve(all[before]!.status);
        };
        socket.write(bytes);
      });
    },
  };
}

/** Everything `socket` reads until it closes (hang detection aside), latin1. */
function readToClose(socket: Socket): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = '';
    const deadline = setTimeout(() => resolve({ text, closed: false }), HANG_MS);
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(deadline);
      resolve({ text, closed: true });
    });
  });
}

describe('plain HTTP sent to the TLS port', () => {
  it('is answered 400 with an Error body in the clear, then closed, and never reaches the upstream', async () => {
    const before = forwarded().length;
    // Plain TCP: the bytes are a request in the clear, which the TLS layer reads as a record that is not one.
    const answer = await sendRaw(edge.running.port, get('plaintext-0001'), { waitMs: HANG_MS });
    expect(answer.closed).toBe(true);
    expect(answer.text).toBe(PLAIN_HTTP_ANSWER);
    expect(forwarded().length).toBe(before);
    await stillServing('after-plaintext-0001');
  });

  it('is answered the same when it trickles in, a few bytes at a time', async () => {
    const before = forwarded().length;
    const socket = connectTcp(edge.running.port, '127.0.0.1');
    const read = readToClose(socket);
    const bytes = get('plaintext-0002');
    for (let at = 0; at < bytes.length && !socket.destroyed; at += 3) {
      socket.write(bytes.slice(at, at + 3));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(await read).toEqual({ text: PLAIN_HTTP_ANSWER, closed: true });
    expect(forwarded().length).toBe(before);
    await stillServing('after-plaintext-0002');
  });

  it.each(['POST', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'])('is answered the same for a %s', async (method) => {
    const before = forwarded().length;
    const answer = await sendRaw(edge.running.port, get(`plaintext-${method}`).replace('GET', method), { waitMs: HANG_MS });
    expect(answer).toEqual({ text: PLAIN_HTTP_ANSWER, statuses: [400], closed: true });
    expect(forwarded().length).toBe(before);
  });

  it('leaves bytes that are neither TLS nor a request line (nor a CONNECT) closed without an answer', async () => {
    for (const bytes of ['hello\r\n\r\n', 'CONNECT gw.example:443 HTTP/1.1\r\nHost: gw.example:443\r\n\r\n']) {
      const answer = await sendRaw(edge.running.port, bytes, { waitMs: HANG_MS });
      expect(answer, JSON.stringify(bytes)).toEqual({ text: '', statuses: [], closed: true });
    }
    await stillServing('after-plaintext-0003');
  });
});

describe('renegotiation', () => {
  it('asked for by a TLS 1.2 client is refused, and a connection open meanwhile is served before and after', async () => {
    const other = await conversation();
    expect(await other.ask(get('bystander-0001'))).toBe(200);
    const client = await conversation({ maxVersion: 'TLSv1.2' });
    expect(client.socket.getProtocol()).toBe('TLSv1.2');
    expect(await client.ask(get('renegotiator-0001'))).toBe(200);
    const outcome = await new Promise<string>((resolve) => {
      client.socket.once('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
      client.socket.once('close', () => resolve('closed'));
      client.socket.renegotiate({}, (error) => resolve(error ? `refused ${(error as NodeJS.ErrnoException).code}` : 'accepted'));
    });
    // The listener answers the renegotiation's ClientHello with a no_renegotiation alert, fatal to the client's TLS stack.
    expect(outcome).toBe('error ERR_SSL_NO_RENEGOTIATION');
    client.socket.destroy();
    expect(await other.ask(get('bystander-0002'))).toBe(200);
    other.socket.destroy();
    expect(forwarded()).toEqual(expect.arrayContaining(['bystander-0001', 'renegotiator-0001', 'bystander-0002']));
    await stillServing('after-renegotiation-0001');
  });

  it('is not even possible in TLS 1.3, which the listener prefers', async () => {
    const client = await conversation();
    expect(client.socket.getProtocol()).toBe('TLSv1.3');
    const refused = await new Promise<string | undefined>((resolve) =>
      client.socket.renegotiate({}, (error) => resolve((error as NodeJS.ErrnoException | null)?.code)),
    );
    expect(refused).toBe('ERR_SSL_WRONG_SSL_VERSION');
    client.socket.destroy();
  });
});

describe('a handshake left unfinished', () => {
  it.each([
    ['the first byte of a ClientHello, then a FIN', 1 / 367, false, 'end'],
    ['half a ClientHello, then a FIN', 0.5, false, 'end'],
    ['half a ClientHello, then a reset', 0.5, false, 'reset'],
    ['a whole ClientHello, then a FIN once the server answered', 1, true, 'end'],
    ['a whole ClientHello, then a reset once the server answered', 1, true, 'reset'],
  ] as const)('%s: no HTTP, and the listener serves others', async (_what, fraction, awaitServer, leave) => {
    const hello = await clientHello();
    const socket = connectTcp(edge.running.port, '127.0.0.1');
    const read = readToClose(socket);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(hello.subarray(0, Math.max(1, Math.ceil(fraction * hello.length))));
    if (awaitServer) await new Promise((resolve) => socket.once('data', resolve));
    if (leave === 'reset') socket.resetAndDestroy();
    else socket.end();
    const { text, closed } = await read;
    // The FIN is answered with the listener's own close.
    expect(closed).toBe(true);
    expect(text).not.toMatch(/HTTP\/1\.[01]/);
    // A whole ClientHello is answered by the server's first flight, a handshake record (type 22).
    if (awaitServer) expect(text.charCodeAt(0)).toBe(22);
    await stillServing(`after-handshake-${fraction}-${leave}`);
  });
});

describe('a TLS client leaving mid-request', () => {
  const PET = '{"name":"Nibbles","categoryId":4}';

  it('with close_notify: its part of a body is never forwarded', async () => {
    const before = forwarded().length;
    const socket = tls.connect(edge.running.port);
    const read = readToClose(socket);
    socket.write(postHead('close-notify-0001', PET.length) + PET.slice(0, 10));
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.end();
    const { text, closed } = await read;
    expect(closed).toBe(true);
    // What Node's parser makes of a session closed mid-body (HPE_INVALID_EOF_STATE): the gateway's 400 Error, if anything.
    expect(parseResponses(text).map((response) => response.status)).toEqual(text === '' ? [] : [400]);
    expect(forwarded().slice(before)).toEqual([]);
    await stillServing('after-close-notify-0001');
  });

  it('with close_notify right after a whole request: the request is forwarded once, and answered or dropped as one', async () => {
    const before = forwarded().length;
    const socket = tls.connect(edge.running.port);
    const read = readToClose(socket);
    socket.write(get('close-notify-0002'));
    socket.end();
    const { text, closed } = await read;
    expect(closed).toBe(true);
    expect(parseResponses(text).map((response) => response.status)).toEqual(forwarded().length > before && text !== '' ? [200] : []);
    expect(forwarded().slice(before).length).toBeLessThanOrEqual(1);
    await stillServing('after-close-notify-0002');
  });

  it('with a TCP reset under the session: its part of a body is never forwarded', async () => {
    const before = forwarded().length;
    const wire = openWire(edge.running.port);
    const socket = tls.connect(edge.running.port, undefined, { socket: wire.duplex });
    const read = readToClose(socket);
    await new Promise<void>((resolve) => socket.write(postHead('reset-0001', PET.length) + PET.slice(0, 10), () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, 50));
    wire.raw.resetAndDestroy();
    expect((await read).closed).toBe(true);
    expect(forwarded().slice(before)).toEqual([]);
    await stillServing('after-reset-0001');
  });

  it('after half a TLS record: a whole request inside it is never forwarded, nor answered', async () => {
    const before = forwarded().length;
    const wire = openWire(edge.running.port);
    const socket = await new Promise<Socket>((resolve) => {
      const opened = tls.connect(edge.running.port, () => resolve(opened), { socket: wire.duplex });
    });
    const read = readToClose(socket);
    // The request is whole, but only half the record carrying it is written: the TLS layer cannot open it, the parser never sees it.
    wire.cutNextRecord();
    socket.write(get('half-record-0001') + postHead('half-record-0002', PET.length) + PET);
    const { text } = await read;
    expect(text).toBe('');
    expect(forwarded().slice(before)).toEqual([]);
    await stillServing('after-half-record-0001');
  });
});

describe('a handshake that stalls', () => {
  /** The listener's handshake timeout is listen.headersTimeoutMs (server.ts: "a handshake is part of sending the headers"). */
  const HANDSHAKE_MS = 1000;
  /** Scheduling slack past the deadline: well below the 5 s a connection refused outside the pipeline may linger (client-error.ts). */
  const SLACK_MS = 1500;

  it('is closed at the handshake timeout, without a byte of HTTP, whether the client sent nothing, half a hello or a whole one', async () => {
    const stalled = await startEdge(upstream.baseUrl, { listen: { headersTimeoutMs: HANDSHAKE_MS } }, undefined, tls);
    try {
      const hello = await clientHello();
      const closings = [0, 0.5, 1].map(async (fraction) => {
        const socket = connectTcp(stalled.running.port, '127.0.0.1');
        const started = Date.now();
        const read = readToClose(socket);
        await once(socket, 'connect');
        if (fraction > 0) socket.write(hello.subarray(0, Math.ceil(fraction * hello.length)));
        const { text, closed } = await read;
        return { fraction, closed, http: /HTTP\/1\.[01]/.test(text), closedAfterMs: Date.now() - started };
      });
      for (const closing of await Promise.all(closings)) {
        expect(closing).toMatchObject({ closed: true, http: false });
        // Node's timeout fires a clientError; were it answered as an HTTP one (a refusal, then a 5 s linger), the socket would outlive it.
        expect(closing.closedAfterMs, `closed ${closing.closedAfterMs} ms after connecting (${closing.fraction} of a hello sent)`).toBeLessThan(
          HANDSHAKE_MS + SLACK_MS,
        );
      }
    } finally {
      await stalled.close();
    }
  });
});

describe('clients that reset their connection while their body arrives', () => {
  /** A connection reset is seen at once over TCP; waiting this long only gives the gateway time to see it (far below the 5 s linger). */
  const NOTICE_MS = 500;
  const transports = [TCP, tls];

  it.each(transports)('over $name, give back their places in flight: a client after them is served, not shed', async (transport) => {
    const capped = await startEdge(upstream.baseUrl, { listen: { maxInFlight: 3 } }, undefined, transport);
    try {
      const head = `POST /v1/pets HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${capped.gateway.apiKey}\r\nContent-Type: application/json\r\nContent-Length: 34\r\n\r\n{"nam`;
      await Promise.all(
        [0, 1, 2].map(
          (gap) =>
            new Promise<void>((resolve) => {
              // Over TLS the reset comes from beneath the session (a TCP RST, no close_notify); over TCP it is the socket's own.
              const wire = transport.name === 'tls' ? openWire(capped.running.port) : undefined;
              const socket = transport.connect(
                capped.running.port,
                () => {
                  socket.write(head);
                  setTimeout(() => (wire ? wire.raw.resetAndDestroy() : socket.resetAndDestroy()), gap);
                },
                wire ? { socket: wire.duplex } : {},
              );
              socket.on('error', () => undefined);
              socket.on('close', () => resolve());
            }),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, NOTICE_MS));
      const inFlightNow = parseExposition(await capped.gateway.scrape()).get(seriesKey('petstore_gateway_in_flight_requests', { environment: 'production' }));
      const after = await sendRaw(capped.running.port, get('after-resets-0001').replace(key, capped.gateway.apiKey), { transport, responses: 1 });
      expect({ inFlightNow, statuses: after.statuses }).toEqual({ inFlightNow: 0, statuses: [200] });
    } finally {
      await capped.close();
    }
  });
});
