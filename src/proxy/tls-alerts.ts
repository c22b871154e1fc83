// A backend's TLS alert that undici reports as "other side closed": kept per connection, so the exchange can say what the backend said.
import type { TLSSocket } from 'node:tls';
import { isTlsFailure } from './upstream-failure.ts';

/**
 * Under TLS 1.3 a backend checks the gateway's client certificate after the handshake has finished on the gateway's
 * side: its alert (certificate_required, unknown_ca...) reaches a socket undici already holds. undici records the
 * alert, then, seeing the connection end, destroys the socket with its own SocketError ("other side closed"), which
 * replaces the alert as the request's error (lib/dispatcher/client-h1.js, onHttpSocketError and onHttpSocketEnd).
 * That SocketError names the connection's local port: the alert is found by it. The integration test of a backend
 * refusing the gateway's missing certificate fails if undici stops reporting either.
 */
export class TlsAlerts {
  private readonly byLocalPort = new Map<number, Error>();

  /** Remembers the TLS errors `socket` reports once connected, until its close has been reported. */
  watch(socket: TLSSocket): void {
    const port = socket.localPort;
    if (port === undefined) return;
    socket.on('error', (error) => {
      if (isTlsFailure(error)) this.byLocalPort.set(port, error);
    });
    // undici reports the request's failure in its own `close` listener, after this one: forgotten a turn later.
    socket.once('close', () => setImmediate(() => this.byLocalPort.delete(port)));
  }

  /** The TLS alert behind undici's SocketError, when its connection had one; otherwise `error` itself. */
  readonly explain = (error: Error): Error => {
    if ((error as { code?: unknown }).code !== 'UND_ERR_SOCKET') return error;
    const port = (error as { socket?: { localPort?: unknown } }).socket?.localPort;
    return (typeof port === 'number' && this.byLocalPort.get(port)) || error;
  };
}
