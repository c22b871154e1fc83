// Answers what Node's HTTP parser hands over instead of a request (malformed framing, oversized headers, slow senders, CONNECT) with an Error body.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError } from '../errors/gateway-error.ts';

/** Runs a refusal in its turn on the connection (serve-in-turn.ts's `answerInTurn`); false: close without one. */
export type AnswerInTurn = (socket: Socket, answer: () => void) => boolean;

export interface RawRefusalOptions {
  /** An X-Request-Id for each refusal (these never reach the pipeline, which gives every other answer its id); absent: none. */
  requestId?: () => string;
  /** Once a refusal's turn came, the connection closes within this long whatever the client does (default 5000). */
  lingerMs?: number;
}

/** The refusal for a parser error; Node's default answer would be a bare status line without a body. */
function clientErrorRefusal(error: NodeJS.ErrnoException): GatewayError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new GatewayError('header_fields_too_large', 'Request headers are larger than the gateway accepts');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new GatewayError('request_timeout', 'The request was not received in time');
    default:
      return new GatewayError('invalid_request', 'The request is not valid HTTP/1.1');
  }
}

/** Node's HTTP layer's errors: its parser's (HPE_*) and its timeouts' (ERR_HTTP_*). */
const HTTP_LAYER_ERROR = /^(HPE_|ERR_HTTP_)/;

/**
 * Whether the client has gone rather than sent bytes it could read an answer to: a reset; a socket no longer
 * writable; a failed TLS handshake; or, on a TLS listener, the client's end in the middle of a request, which is
 * how a reset of the TCP connection under the session is reported (and node:https allows no half-open connection
 * a client could read a refusal on).
 */
function clientGone(error: NodeJS.ErrnoException, socket: Socket): boolean {
  if (error.code === 'ECONNRESET' || !socket.writable) return true;
  if (!('encrypted' in socket)) return false;
  // node:https reports its handshake failures as client errors too: only the HTTP layer's own errors come with a session to answer on.
  return !HTTP_LAYER_ERROR.test(error.code ?? '') || error.code === 'HPE_INVALID_EOF_STATE';
}

/** CONNECT asks for a tunnel, which only a proxy makes: the gateway is an origin server to its clients. */
const CONNECT_REFUSAL = new GatewayError('invalid_request', 'CONNECT is not served: the gateway is not a proxy');

/** How long a refused connection may stay open after its refusal's turn: long enough to read a 400, short enough not to hoard sockets. */
const LINGER_MS = 5000;

/**
 * Closes `socket` `lingerMs` from now: an absolute deadline, not `socket.setTimeout`, which every trickled byte would restart
 * (no parser timeout watches a CONNECT socket, and Node's one-shot header timeout may be spent already).
 */
function closeWithin(socket: Socket, lingerMs: number): void {
  const deadline = setTimeout(() => socket.destroy(), lingerMs).unref();
  socket.once('close', () => clearTimeout(deadline));
}

function checkedLinger(options: RawRefusalOptions): number {
  const { lingerMs = LINGER_MS } = options;
  if (!Number.isFinite(lingerMs) || lingerMs <= 0) throw new RangeError(`lingerMs must be a positive number of milliseconds, not ${lingerMs}`);
  return lingerMs;
}

/**
 * For `server.on('clientError')`: complete requests before the bad bytes are answered first, in order, then the refusal, which
 * closes the connection; one response per request (see answerInTurn).
 */
export function createClientErrorHandler(answerInTurn: AnswerInTurn, options: RawRefusalOptions = {}): (error: NodeJS.ErrnoException, socket: Socket) => void {
  const lingerMs = checkedLinger(options);
  return function answerClientError(error, socket) {
    if (clientGone(error, socket)) {
      socket.destroy();
      return;
    }
    const refusal = clientErrorRefusal(error);
    const answered = answerInTurn(socket, () => {
      // A client that never reads nor closes would otherwise hold the ended socket for good.
      closeWithin(socket, lingerMs);
      // The last response may have closed the connection (a drain), or the client left meanwhile.
      if (socket.writable && !socket.writableEnded) writeRefusal(socket, refusal, options.requestId?.());
    });
    if (!answered) socket.destroy();
  };
}

/**
 * For `server.on('connect')` (without a listener Node closes without a word): `400 invalid_request` after the requests before it,
 * closing within `lingerMs` of the refusal's turn (Node has detached its parser and its timeouts).
 */
export function createConnectRefusal(
  answerInTurn: AnswerInTurn,
  options: RawRefusalOptions = {},
): (req: IncomingMessage, socket: Socket, head: Buffer) => void {
  const lingerMs = checkedLinger(options);
  return function refuseConnect(_req, socket) {
    // Node took its own error listener off with its parser: a reset now must not become an uncaught error.
    socket.on('error', () => socket.destroy());
    // Nothing is read while the requests before the CONNECT are answered: what the client sends meanwhile waits in its kernel buffers.
    socket.pause();
    const answered = answerInTurn(socket, () => {
      // Armed only now, not when the CONNECT arrived: a request before it may take its time at the upstream, and its answer is owed.
      closeWithin(socket, lingerMs);
      if (socket.writable && !socket.writableEnded) writeRefusal(socket, CONNECT_REFUSAL, options.requestId?.());
      // Whatever the client sent or sends is read and dropped until its FIN or the deadline, so the close is a
      // FIN, not a reset that could discard the answer (RFC 9112 §9.6).
      socket.resume();
    });
    if (!answered) socket.destroy();
  };
}

function writeRefusal(socket: Socket, refusal: GatewayError, requestId: string | undefined): void {
  const body = JSON.stringify(refusal.toBody());
  socket.end(
    `HTTP/1.1 ${refusal.status} ${refusal.code.replaceAll('_', ' ')}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      (requestId === undefined ? '' : `X-Request-Id: ${requestId}\r\n`) +
      'Connection: close\r\n\r\n' +
      body,
  );
}
