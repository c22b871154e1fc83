// Answers requests Node's HTTP parser rejects (malformed framing, oversized headers, slow senders) with an Error body.
import type { Socket } from 'node:net';
import { GatewayError } from '../errors/gateway-error.ts';

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

/**
 * For `server.on('clientError')`: the connection cannot be reused, so the refusal closes it. Complete
 * requests that came before the bad bytes are answered first, in order (the backend may already be
 * running them); then the refusal. One response per request: when the request the error is in was
 * answered already (a refusal sent before its body ended), the connection is closed without another.
 */
export function createClientErrorHandler(
  answerInTurn: (socket: Socket, answer: () => void) => boolean,
): (error: NodeJS.ErrnoException, socket: Socket) => void {
  return function answerClientError(error, socket) {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const refusal = clientErrorRefusal(error);
    const answered = answerInTurn(socket, () => {
      // The last response may have closed the connection (a drain), or the client left meanwhile.
      if (socket.writable && !socket.writableEnded) writeRefusal(socket, refusal);
    });
    if (!answered) socket.destroy();
  };
}

function writeRefusal(socket: Socket, refusal: GatewayError): void {
  const body = JSON.stringify(refusal.toBody());
  socket.end(
    `HTTP/1.1 ${refusal.status} ${refusal.code.replaceAll('_', ' ')}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}
