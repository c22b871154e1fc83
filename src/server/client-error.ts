// Answers what Node's HTTP parser hands over instead of a request (malformed framing, oversized headers, slow senders, CONNECT) with an Error body.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError } from '../errors/gateway-error.ts';

/** Runs a refusal in its turn on the connection (serve-in-turn.ts's `answerInTurn`); false: close without one. */
export type AnswerInTurn = (socket: Socket, answer: () => void) => boolean;

export interface RawRefusalOptions {
  /**
   * An X-Request-Id for each refusal (the admin listener's, so an operator can quote one); absent: none.
   * These refusals never reach the pipeline, which gives every other answer its id.
   */
  requestId?: () => string;
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

/** CONNECT asks for a tunnel, which only a proxy makes: the gateway is an origin server to its clients. */
const CONNECT_REFUSAL = new GatewayError('invalid_request', 'CONNECT is not served: the gateway is not a proxy');

/**
 * After a refusal written on a socket Node has let go of (CONNECT), the client's FIN closes it; one that
 * never sends it is closed after this long, since no parser timeout watches the socket any more.
 */
const LINGER_MS = 5000;

/**
 * For `server.on('clientError')`: the connection cannot be reused, so the refusal closes it. Complete
 * requests that came before the bad bytes are answered first, in order (the backend may already be
 * running them); then the refusal. One response per request: when the request the error is in was
 * answered already (a refusal sent before its body ended), the connection is closed without another.
 */
export function createClientErrorHandler(answerInTurn: AnswerInTurn, options: RawRefusalOptions = {}): (error: NodeJS.ErrnoException, socket: Socket) => void {
  return function answerClientError(error, socket) {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const refusal = clientErrorRefusal(error);
    const answered = answerInTurn(socket, () => {
      // The last response may have closed the connection (a drain), or the client left meanwhile.
      if (socket.writable && !socket.writableEnded) writeRefusal(socket, refusal, options.requestId?.());
    });
    if (!answered) socket.destroy();
  };
}

/**
 * For `server.on('connect')`: without a listener Node closes the connection without a word. CONNECT, in
 * any target form, gets `400 invalid_request` after the requests before it on the connection, and the
 * connection closes (Node has detached its parser: nothing more would be read).
 */
export function createConnectRefusal(
  answerInTurn: AnswerInTurn,
  options: RawRefusalOptions = {},
): (req: IncomingMessage, socket: Socket, head: Buffer) => void {
  return function refuseConnect(_req, socket) {
    // Node took its own error listener off with its parser: a reset now must not become an uncaught error.
    socket.on('error', () => socket.destroy());
    // Whatever the client sends after the head is read and dropped, so the close is a FIN, not a reset that could discard the answer.
    socket.resume();
    const answered = answerInTurn(socket, () => {
      if (socket.writable && !socket.writableEnded) writeRefusal(socket, CONNECT_REFUSAL, options.requestId?.());
      // Armed only now: a request before the CONNECT may take its time at the upstream.
      socket.setTimeout(LINGER_MS, () => socket.destroy());
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
