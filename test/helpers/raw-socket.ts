// Byte-for-byte HTTP for protocol tests: a client that writes exact bytes, and an upstream that records what it receives.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { TCP, type EdgeTransport } from './edge-transport.ts';

export interface RawAnswer {
  /** Everything the gateway wrote, as latin1 text (one char per byte). */
  text: string;
  /** The status of every response on the connection, in order: more than one per request is a defect. */
  statuses: number[];
  /** Whether the gateway closed the connection before the deadline. */
  closed: boolean;
}

export interface RawSendOptions {
  /**
   * Give up waiting after this long; the answer so far is returned. Default: 2000 ms of watching for
   * whatever comes; with `responses`, 15 s, only to detect a hang (the wait ends when they have arrived).
   */
  waitMs?: number;
  /** Resolve as soon as this many complete responses arrived (default: wait for close or the deadline). */
  responses?: number;
  /** Written after the first bytes, once the first response head arrived (for Expect: 100-continue). */
  afterFirstResponse?: string | Buffer;
  /** Plain TCP (the default) or TLS: the bytes are the same, written once the connection is ready (TLS: after the handshake). */
  transport?: EdgeTransport;
}

/** How long a connection may take to be ready (a TLS handshake on a loaded machine): hang detection only. */
const CONNECT_MS = 10_000;

/** Splits a byte stream of responses; each body is framed by Content-Length (the gateway never chunks errors). */
export function parseResponses(text: string): Array<{ status: number; headers: Record<string, string>; body: string }> {
  const responses: Array<{ status: number; headers: Record<string, string>; body: string }> = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) break;
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const status = Number(statusLine!.slice(9, 12));
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    const length = status === 100 || status === 204 || status === 304 ? 0 : Number(headers['content-length'] ?? 0);
    const chunked = headers['transfer-encoding']?.includes('chunked');
    let body = '';
    let next = end + 4;
    if (chunked) {
      for (;;) {
        const lineEnd = rest.indexOf('\r\n', next);
        if (lineEnd === -1) break;
        const size = parseInt(rest.slice(next, lineEnd), 16);
        next = lineEnd + 2 + size + 2;
        if (size === 0) break;
        body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
      }
    } else {
      body = rest.slice(next, next + length);
      next += length;
    }
    responses.push({ status, headers, body });
    rest = rest.slice(next);
  }
  return responses;
}

/**
 * Counts the complete final (non-1xx) responses of an answer that grows chunk by chunk, scanning each byte once:
 * rescanning the whole answer on every chunk made a 3000-response pipelined flood take minutes of the test's CPU.
 */
function finalResponseCounter(bodiless: boolean): (text: string) => number {
  const statusLine = /HTTP\/1\.1 ([1-5]\d\d) /g;
  let finals = 0;
  let scanned = 0;
  let last: { index: number; final: boolean } | undefined;
  return (text) => {
    statusLine.lastIndex = scanned;
    for (let match = statusLine.exec(text); match !== null; match = statusLine.exec(text)) {
      const final = match[1]![0] !== '1';
      if (final) finals++;
      last = { index: match.index, final };
      scanned = statusLine.lastIndex;
    }
    // The last one counts only once its body arrived.
    return last?.final && !arrivedWhole(text.slice(last.index), bodiless) ? finals - 1 : finals;
  };
}

/** Whether the response `text` starts with has arrived to the end of its body (a HEAD's has none). */
function arrivedWhole(text: string, bodiless: boolean): boolean {
  const [response] = parseResponses(text);
  if (response === undefined) return false;
  if (bodiless) return true;
  if (response.headers['transfer-encoding']?.includes('chunked')) return text.includes('\r\n0\r\n\r\n');
  return response.body.length === Number(response.headers['content-length'] ?? 0) || [100, 204, 304].includes(response.status);
}

/**
 * Opens a connection, writes `bytes` exactly, and collects the answer. The wait (`waitMs`) starts once the connection is ready, so
 * a TLS handshake does not eat into it: `waitMs: 1` writes and abandons at once over either transport.
 */
export function sendRaw(port: number, bytes: string | Buffer, options: RawSendOptions = {}): Promise<RawAnswer> {
  const { waitMs = options.responses === undefined ? 2000 : 15_000, transport = TCP } = options;
  // Answers to HEAD declare a length but carry no body.
  const bodiless = (typeof bytes === 'string' ? bytes : bytes.toString('latin1', 0, 5)).startsWith('HEAD ');
  return new Promise((resolve, reject) => {
    const socket: Socket = transport.connect(port, () => {
      socket.write(bytes);
      clearTimeout(deadline);
      deadline = setTimeout(finish, waitMs);
    });
    let text = '';
    let closed = false;
    let sentFollowUp = false;
    const finalResponses = finalResponseCounter(bodiless);
    const finish = () => {
      clearTimeout(deadline);
      socket.destroy();
      resolve({ text, statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1])), closed });
    };
    let deadline = setTimeout(finish, Math.max(waitMs, CONNECT_MS));
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (options.afterFirstResponse !== undefined && !sentFollowUp && text.includes('\r\n\r\n')) {
        sentFollowUp = true;
        socket.write(options.afterFirstResponse);
      }
      if (options.responses !== undefined && finalResponses(text) >= options.responses) finish();
    });
    socket.on('close', () => {
      closed = true;
      finish();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // A reset after the answer was written still leaves the answer to inspect.
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return;
      clearTimeout(deadline);
      reject(error);
    });
  });
}

/** A server of this file listening on a free loopback port: its address, and a close that drops its connections first. */
export interface Listening {
  port: number;
  /** As the gateway's UPSTREAM_URL wants it. */
  baseUrl: string;
  close(): Promise<void>;
}

async function listenOnFreePort(
  server: { listen(port: number, host: string, done: () => void): unknown; address(): unknown; close(done: () => void): unknown },
  dropConnections: () => void,
): Promise<Listening> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise((resolve) => {
        dropConnections();
        server.close(() => resolve());
      }),
  };
}

export interface RecordedRequest {
  method: string;
  url: string;
  /** Header names and values exactly as received, in order. */
  rawHeaders: string[];
  headers: IncomingMessage['headers'];
  body: Buffer;
}

export interface RecordingUpstream extends Listening {
  requests: RecordedRequest[];
  /** Every byte received, per connection, in arrival order. */
  connections: string[];
  /** Connections open now. */
  openConnections(): number;
}

/** An upstream that records each request whole and answers with `respond` (default: 200 `[]`). */
export async function startRecordingUpstream(
  respond: (req: RecordedRequest, res: ServerResponse) => void = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' });
    res.end('[]');
  },
): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = [];
  const connections: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded = { method: req.method ?? '', url: req.url ?? '', rawHeaders: req.rawHeaders, headers: req.headers, body: Buffer.concat(chunks) };
      requests.push(recorded);
      respond(recorded, res);
    });
  });
  let open = 0;
  server.on('connection', (socket: Socket) => {
    const index = connections.push('') - 1;
    open++;
    socket.on('close', () => open--);
    socket.on('data', (chunk: Buffer) => (connections[index] += chunk.toString('latin1')));
  });
  return { ...(await listenOnFreePort(server, () => server.closeAllConnections())), requests, connections, openConnections: () => open };
}

/** A TCP upstream that answers every connection with bytes no HTTP library would write (101 to a GET, cut bodies). */
export async function startRawUpstream(answer: (socket: Socket, received: string) => void): Promise<Listening> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n\r\n')) answer(socket, received);
    });
    socket.on('error', () => undefined);
  });
  return listenOnFreePort(server, () => {
    for (const socket of sockets) socket.destroy();
  });
}

/** One request as a raw upstream read it: which connection it came on, and its request line. */
export interface ReadRequest {
  /** 0 for the upstream's first connection, 1 for its second... */
  connection: number;
  socket: Socket;
  method: string;
  target: string;
  head: string;
}

/**
 * A TCP upstream that reads each connection's requests one after another (heads, and bodies by their
 * Content-Length, as the gateway sends them) and hands each to `answer` with every request read so far,
 * so a test can write whatever bytes it likes on any connection at the moment a given request arrives.
 */
export async function startReadingUpstream(
  answer: (request: ReadRequest, all: readonly ReadRequest[]) => void,
): Promise<Listening & { requests: ReadRequest[] }> {
  const sockets = new Set<Socket>();
  const requests: ReadRequest[] = [];
  let connections = 0;
  const server = createTcpServer((socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const connection = connections++;
    let buffered = '';
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = buffered.slice(0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.slice(end + 4 + length);
        const [method = '', target = ''] = head.slice(0, head.indexOf('\r\n')).split(' ');
        const request = { connection, socket, method, target, head };
        requests.push(request);
        answer(request, requests);
      }
    });
  });
  const listening = await listenOnFreePort(server, () => {
    for (const socket of sockets) socket.destroy();
  });
  return { ...listening, requests };
}
