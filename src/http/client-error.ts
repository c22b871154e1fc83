// Answers requests Node's HTTP parser rejects (malformed framing, oversized headers, slow senders) with an Error body.
import type { Socket } from 'node:net';
import { GatewayError } from '../errors/gateway-error.ts';

/** The refusal for a parser error; Node's default answer would be a bare status line without a body. */
export function clientErrorRefusal(error: NodeJS.ErrnoException): GatewayError {
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
 * For `server.on('clientError')`: the connection cannot be reused, so the answer closes it. One
 * response per request: when the gateway already answered on this connection (a refusal sent before
 * the body ended, or a response under way), the connection is closed without writing another.
 */
export function createClientErrorHandler(mayAnswerOn: (socket: Socket) => boolean): (error: NodeJS.ErrnoException, socket: Socket) => void {
  return function answerClientError(error, socket) {
    if (error.code === 'ECONNRESET' || !socket.writable || !mayAnswerOn(socket)) {
      socket.destroy();
      return;
    }
    writeRefusal(socket, clientErrorRefusal(error));
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
