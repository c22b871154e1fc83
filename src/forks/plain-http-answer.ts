// A TLS listener's answer to plain HTTP: 400 with an Error body, in the clear, then the close (nginx's "plain HTTP request was sent to HTTPS port").
// Relies on what Node does not declare: the TCP socket beneath a TLS session whose handshake failed can still be written before
// node:https's own `tlsClientError` handling destroys it (the tls-edge tests and the edge harness fail if it stops).
import type { Server, Socket } from 'node:net';

/**
 * The handshake failure of a first record that is a plain request line: OpenSSL recognises `GET `, `POST `, `HEAD `, `PUT ` and
 * the beginnings of PATCH, OPTIONS, DELETE and TRACE before any TLS. Other bytes that are not TLS (a CONNECT included) fail
 * otherwise, and are closed without an answer.
 */
const PLAIN_HTTP = 'ERR_SSL_HTTP_REQUEST';

/** The refusal as the gateway words it (its caller makes it from the gateway's Error type: this module imports nothing of src/). */
export interface PlainHttpRefusal {
  readonly status: number;
  readonly code: string;
  /** The Error body's JSON. */
  readonly body: string;
}

/** The whole answer, the same bytes every time: a status line, the Error body, and the close it announces. */
export function plainHttpAnswer({ status, code, body }: PlainHttpRefusal): string {
  return (
    `HTTP/1.1 ${status} ${code.replaceAll('_', ' ')}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/** A TCP connection's identity while it is open: the addresses and ports at both ends. */
const endpoints = (socket: Pick<Socket, 'localAddress' | 'localPort' | 'remoteAddress' | 'remotePort'>) =>
  `${socket.localAddress}|${socket.localPort}|${socket.remoteAddress}|${socket.remotePort}`;

/**
 * On `server`, a TLS listener: a client whose handshake fails on a plain request line is answered `answer` (plainHttpAnswer's bytes) in the clear. The
 * answer is written on the TCP connection beneath the failed session (the `connection` event's socket, found again by its endpoints:
 * Node hands the handshake failure the TLS socket only), before Node closes it. The failure is still counted and the connection still
 * closed by the listener's own `tlsClientError` handling; this only puts the answer first.
 */
export function answerPlainHttp(server: Server, answer: string): void {
  const open = new Map<string, Socket>();
  // Prepended: the TLS layer's own `connection` listener wraps the socket, and the endpoints are read before it does.
  server.prependListener('connection', (raw: Socket) => {
    const key = endpoints(raw);
    open.set(key, raw);
    raw.once('close', () => open.delete(key));
  });
  // Prepended too: node:https's own listener hands the failure to `clientError`, whose handler destroys the socket.
  server.prependListener('tlsClientError', (error: NodeJS.ErrnoException, session: Socket) => {
    if (error.code !== PLAIN_HTTP) return;
    const raw = open.get(endpoints(session));
    // A few hundred bytes on a connection that has written nothing yet: the kernel takes them at once, before the close.
    if (raw?.writable) raw.write(answer);
  });
}
