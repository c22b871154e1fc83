// A connection refused outside the pipeline (CONNECT, bytes that do not parse) closes within its linger deadline, whatever the client does.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClientErrorHandler, createConnectRefusal } from '../../src/server/client-error.ts';
import { serveInTurn } from '../../src/server/serve-in-turn.ts';
import { parseResponses } from '../helpers/raw-socket.ts';

/** Short, so a test takes well under a second or two; production keeps the default. */
const LINGER_MS = 400;
/** Node's own header timeout, spent while a slow earlier request is answered: it cannot close the connection afterwards. */
const HEADERS_TIMEOUT_MS = 200;
/** The answer to GET /slow: longer than the header timeout, as an upstream may well take. */
const SLOW_MS = 500;
/** Between two bytes the client trickles: shorter than the deadline, so an inactivity timer of that length never fires. */
const TRICKLE_MS = 200;
/** Hang detection only: the tests' assertions are on the times measured. */
const HANG_MS = 2500;
/** Scheduling slack allowed past a deadline. */
const SLACK_MS = 250;

const CONNECT = 'CONNECT upstream.example:443 HTTP/1.1\r\nHost: upstream.example:443\r\n\r\n';
const GARBAGE = 'GET /v1/pets HTTP/1.1\r\nHost: gw.example\r\nBad Header: y\r\n\r\n';
const CONNECT_REFUSAL = { code: 'invalid_request', message: 'CONNECT is not served: the gateway is not a proxy', status: 400 };
const PARSE_REFUSAL = { code: 'invalid_request', message: 'The request is not valid HTTP/1.1', status: 400 };

/** The listeners' raw edge (server.ts, admin-listener.ts) with a short linger: GET /slow answers after SLOW_MS, anything else at once. */
let server: Server;
let port: number;
/** When the server's side of each connection closed, by the client's local port (created by whichever side asks first). */
const serverClosings = new Map<number, { at: Promise<number>; close: (at: number) => void }>();
function serverClosing(clientPort: number) {
  let closing = serverClosings.get(clientPort);
  if (!closing) {
    let close: (at: number) => void = () => undefined;
    const at = new Promise<number>((resolve) => (close = resolve));
    closing = { at, close };
    serverClosings.set(clientPort, closing);
  }
  return closing;
}
/** Resolves with when the server closed its side of the connection from `clientPort`; Infinity if it held it past HANG_MS. */
function serverClosed(clientPort: number): Promise<number> {
  return Promise.race([serverClosing(clientPort).at, new Promise<number>((resolve) => setTimeout(resolve, HANG_MS, Infinity))]);
}

beforeAll(async () => {
  server = createServer({
    headersTimeout: HEADERS_TIMEOUT_MS,
    requestTimeout: HEADERS_TIMEOUT_MS * 2,
    connectionsCheckingInterval: 50,
    requireHostHeader: false,
  });
  const admission = serveInTurn(
    (req, res) => {
      const answer = () => res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('[]');
      if (req.url === '/slow') setTimeout(answer, SLOW_MS);
      else answer();
    },
    { maxQueuedPerConnection: 8 },
  );
  server.on('request', admission.listener);
  server.on('clientError', createClientErrorHandler(admission.answerInTurn, { lingerMs: LINGER_MS }));
  server.on('connect', createConnectRefusal(admission.answerInTurn, { lingerMs: LINGER_MS }));
  server.on('connection', (socket: Socket) => {
    const clientPort = socket.remotePort!;
    const closing = serverClosing(clientPort);
    socket.once('close', () => closing.close(performance.now()));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
  await once(server, 'close');
});

interface Lingered {
  /** Everything the server wrote, latin1, read once it closed (a client that never reads reads it then). */
  text: string;
  /** From the first write to the server's close of its side; Infinity if it held the connection past HANG_MS. */
  closedAfterMs: number;
}

/**
 * Writes `bytes`, then one byte every TRICKLE_MS until the server closed its side. `reads: false` reads
 * nothing until then, as a client that lets its receive buffer fill would.
 */
async function trickle(bytes: string, { reads }: { reads: boolean }): Promise<Lingered> {
  // Half-open allowed: the server's FIN does not make the client end its side, as a hostile client would not.
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  await once(socket, 'connect');
  if (!reads) socket.pause();
  const clientPort = socket.localPort!;
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  const readAll = readToEnd(socket);
  // The server's close makes a later trickled byte meet a reset; what arrived before it is still read.
  socket.on('error', () => undefined);
  const start = performance.now();
  socket.write(bytes);
  const trickler = setInterval(() => socket.writable && socket.write('x'), TRICKLE_MS);
  const closedAt = await serverClosed(clientPort);
  clearInterval(trickler);
  socket.resume();
  // What the server wrote before its close is read to its end (or to a reset a trickled byte met).
  if (closedAt !== Infinity) await readAll;
  socket.destroy();
  return { text, closedAfterMs: closedAt - start };
}

/** Resolves at the server's FIN, or at the reset a trickled byte met: call it before either can happen. */
function readToEnd(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    socket.once('end', resolve);
    socket.once('close', resolve);
  });
}

function onlyAnswer(text: string, statuses: number[]) {
  const responses = parseResponses(text);
  expect(responses.map((response) => response.status)).toEqual(statuses);
  const refusal = responses.at(-1)!;
  expect(refusal.headers).toEqual({
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(refusal.body)),
    connection: 'close',
  });
  return JSON.parse(refusal.body) as unknown;
}

describe('a refused CONNECT', () => {
  it('from a client that trickles a byte at a time gets its 400 Error body and is closed within the linger deadline', async () => {
    const lingered = await trickle(CONNECT, { reads: true });
    expect(onlyAnswer(lingered.text, [400])).toEqual(CONNECT_REFUSAL);
    expect(lingered.closedAfterMs).toBeLessThan(LINGER_MS + SLACK_MS);
  });

  it('from a client that trickles and never reads is closed within the linger deadline, its 400 Error body left to read', async () => {
    const lingered = await trickle(CONNECT, { reads: false });
    expect(lingered.closedAfterMs).toBeLessThan(LINGER_MS + SLACK_MS);
    expect(onlyAnswer(lingered.text, [400])).toEqual(CONNECT_REFUSAL);
  });

  it('behind a slow GET is answered after it, and the deadline runs from its own turn', async () => {
    const lingered = await trickle(`GET /slow HTTP/1.1\r\nHost: gw.example\r\n\r\n${CONNECT}`, { reads: true });
    expect(onlyAnswer(lingered.text, [200, 400])).toEqual(CONNECT_REFUSAL);
    expect(parseResponses(lingered.text)[0]!.body).toBe('[]');
    expect(lingered.closedAfterMs).toBeGreaterThanOrEqual(SLOW_MS);
    expect(lingered.closedAfterMs).toBeLessThan(SLOW_MS + LINGER_MS + SLACK_MS);
  });
});

describe('refused bytes that do not parse', () => {
  it('behind a GET slower than the header timeout, from a client that never reads nor closes, are closed within the linger deadline', async () => {
    // Half-open allowed: the server's FIN does not make the client end its side, as a hostile client would not.
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    await once(socket, 'connect');
    socket.pause();
    const clientPort = socket.localPort!;
    const start = performance.now();
    socket.write(`GET /slow HTTP/1.1\r\nHost: gw.example\r\n\r\n${GARBAGE}`);
    const closedAfterMs = (await serverClosed(clientPort)) - start;
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    const readAll = readToEnd(socket);
    socket.resume();
    if (closedAfterMs !== Infinity) await readAll;
    socket.destroy();
    expect(closedAfterMs).toBeGreaterThanOrEqual(SLOW_MS);
    expect(closedAfterMs).toBeLessThan(SLOW_MS + LINGER_MS + SLACK_MS);
    expect(onlyAnswer(text, [200, 400])).toEqual(PARSE_REFUSAL);
  });

  it('from a client that trickles after them are closed within the linger deadline', async () => {
    const lingered = await trickle(GARBAGE, { reads: true });
    expect(onlyAnswer(lingered.text, [400])).toEqual(PARSE_REFUSAL);
    expect(lingered.closedAfterMs).toBeLessThan(LINGER_MS + SLACK_MS);
  });
});

describe('the linger option', () => {
  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses lingerMs %s at construction', (lingerMs) => {
    const answerInTurn = () => true;
    expect(() => createConnectRefusal(answerInTurn, { lingerMs })).toThrow(RangeError);
    expect(() => createClientErrorHandler(answerInTurn, { lingerMs })).toThrow(RangeError);
  });
});
