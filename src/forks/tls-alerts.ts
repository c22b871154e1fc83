// A backend's TLS alert that undici reports as "other side closed": kept per connection, so the exchange can say what the backend said.
// Relies on undici's undeclared order of a client's errors (the forks table, src/forks/README.md).
import type { TLSSocket } from 'node:tls';

/**
 * Under TLS 1.3 a backend checks the gateway's client certificate after the handshake has finished on the gateway's
 * side: its alert (certificate_required, unknown_ca...) reaches a socket undici already holds. undici records the
 * alert, then, seeing the connection end, destroys the socket with its own SocketError ("other side closed"), which
 * replaces the alert as the request's error (undici 8, lib/dispatcher/client-h1.js, onHttpSocketError and
 * onHttpSocketEnd). That order is declared nowhere; the SocketError's `socket.localPort` is (undici's types): the
 * alert is found by it. test/unit/forks/tls-alerts.test.ts holds undici to both, and
 * test/integration/tls-alerts-engaged.test.ts fails when the running gateway's answer stops being named here.
 */
export class TlsAlerts {
  private readonly byLocalPort = new Map<number, Error>();

  /** Remembers the OpenSSL errors `socket` reports once connected (the backend's alerts), until its close has been reported. */
  watch(socket: TLSSocket): void {
    const port = socket.localPort;
    if (port === undefined) return;
    socket.on('error', (error: Error & { code?: unknown }) => {
      // Node names OpenSSL's errors ERR_SSL_<reason>, an alert received ERR_SSL_<version>_ALERT_<alert>; a reset or a
      // timeout is the request's own error already.
      if (typeof error.code === 'string' && error.code.startsWith('ERR_SSL_')) this.byLocalPort.set(port, error);
    });
    // undici reports the request's failure in its own `close` listener, after this one: forgotten a turn later.
    socket.once('close', () => setImmediate(() => this.byLocalPort.delete(port)));
  }

  /** The TLS alert behind undici's SocketError, when its connection had one; otherwise `error` itself. Called unbound. */
  readonly explain = (error: Error): Error => this.alertBehind(error) ?? error;

  /** The alert `error`'s connection reported, when `error` is undici's SocketError and there was one. */
  alertBehind(error: Error): Error | undefined {
    if ((error as { code?: unknown }).code !== 'UND_ERR_SOCKET') return undefined;
    const port = (error as { socket?: { localPort?: unknown } }).socket?.localPort;
    return typeof port === 'number' ? this.byLocalPort.get(port) : undefined;
  }
}
