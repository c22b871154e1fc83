// A lingering close: after an answer that ends the connection while the client still sends, read and drop for a bounded while, then close.
import type { Socket } from 'node:net';

/** How long, and how much, a connection is read and dropped after its last answer before it is closed. */
export interface LingerBounds {
  /** From the answer's end: the connection is closed this long after at most, whatever the client does. */
  ms: number;
  /** Bytes read past the answer's end: the connection is closed once the client has sent more. */
  bytes: number;
  /** How often the bytes read are looked at while lingering. */
  checkEveryMs: number;
}

/**
 * Node's HTTP server ends a connection after an answer that says `Connection: close` with `socket.destroySoon()` (node:_http_server,
 * `resOnFinish`): the socket is destroyed once the answer is written. When the client is still sending (a body refused before it was
 * read), the kernel answers the bytes it had not handed over with a reset, which can reach the client before it reads the answer
 * (RFC 9112 §9.6). Here `destroySoon` is this socket's own: when `lingerWanted()` says so, the answer is followed by a FIN and what
 * the client sends is read and dropped (Node's parser discards the rest of the body) until its FIN or a bound, then the socket
 * goes; otherwise Node's own. Relies on Node's HTTP server closing through `destroySoon` (the engaged test fails if it stops).
 */
export function lingerBeforeClosing(socket: Socket, lingerWanted: () => boolean, bounds: LingerBounds): void {
  const destroySoon = socket.destroySoon;
  socket.destroySoon = function lingeringClose(this: Socket) {
    if (!lingerWanted()) {
      destroySoon.call(this);
      return;
    }
    linger(this, bounds);
  };
}

function linger(socket: Socket, bounds: LingerBounds): void {
  const readBefore = socket.bytesRead;
  const closeNow = () => socket.destroy();
  // The client closed its side: nothing more will come; the socket goes once the answer and the FIN are written.
  socket.once('end', () => {
    if (socket.writableFinished) closeNow();
    else socket.once('finish', closeNow);
  });
  const deadline = setTimeout(closeNow, bounds.ms).unref();
  const watching = setInterval(() => {
    if (socket.bytesRead - readBefore > bounds.bytes) closeNow();
  }, bounds.checkEveryMs).unref();
  socket.once('close', () => {
    clearTimeout(deadline);
    clearInterval(watching);
  });
  if (socket.writable) socket.end();
}
