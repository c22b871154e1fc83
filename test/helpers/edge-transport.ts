// How a raw-socket test reaches the gateway's public listener: plain TCP, or TLS trusting a test authority (the listener then HTTPS).
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';
import type { Duplex } from 'node:stream';
import { createTestPki, type IssuedCertificate, type TestPki } from './test-certificates.ts';

export type TransportName = 'tcp' | 'tls';

/** TLS connect options a test may set (a version cap, a socket of its own to write ciphertext through); never the trust. */
export interface TlsClientOptions {
  maxVersion?: ConnectionOptions['maxVersion'];
  minVersion?: ConnectionOptions['minVersion'];
  /** The connection the TLS session runs over, instead of a new one to the port. */
  socket?: Duplex;
}

export interface EdgeTransport {
  readonly name: TransportName;
  /** The scheme the gateway gives the client's connection in Forwarded and X-Forwarded-Proto. */
  readonly proto: 'http' | 'https';
  /** The settings that make the gateway's public listener speak it: none for plain HTTP, TLS_CERT_FILE and TLS_KEY_FILE for TLS. */
  env(): Record<string, string>;
  /**
   * A connection to `port` on loopback. `ready` runs once written bytes reach the gateway's HTTP parser as written: TCP connected,
   * or the TLS handshake done (servername localhost, the test authority trusted, nothing else). Writes before it are queued.
   */
  connect(port: number, ready?: () => void, tls?: TlsClientOptions): Socket;
}

/** Plain HTTP over TCP, the listener's default. */
export const TCP: EdgeTransport = {
  name: 'tcp',
  proto: 'http',
  env: () => ({}),
  connect: (port, ready) => (ready ? connectTcp(port, '127.0.0.1', ready) : connectTcp(port, '127.0.0.1')),
};

export interface TlsTransport extends EdgeTransport {
  readonly name: 'tls';
  /** The authority the listener's certificate is issued by (PEM), the only one the client trusts. */
  ca(): string;
  /** The listener's certificate and key. */
  listener(): IssuedCertificate;
  /** Deletes the certificates, once every gateway using them has stopped. */
  remove(): void;
}

/** HTTPS: certificates made on first use (openssl, a few milliseconds), in a directory of their own. */
export function createTlsTransport(): TlsTransport {
  let made: { pki: TestPki; ca: string; listener: IssuedCertificate } | undefined;
  const certificates = () => {
    if (made === undefined) {
      const pki = createTestPki();
      const authority = pki.authority('edge-ca');
      made = { pki, ca: authority.cert, listener: authority.issue({ name: 'edge-listener' }) };
    }
    return made;
  };
  return {
    name: 'tls',
    proto: 'https',
    env: () => ({ TLS_CERT_FILE: certificates().listener.certFile, TLS_KEY_FILE: certificates().listener.keyFile }),
    ca: () => certificates().ca,
    listener: () => certificates().listener,
    connect(port, ready, tls = {}) {
      const options: ConnectionOptions = { ca: certificates().ca, servername: 'localhost', ...tls };
      if (tls.socket === undefined) Object.assign(options, { host: '127.0.0.1', port });
      return ready ? connectTls(options, ready) : connectTls(options);
    },
    remove() {
      made?.pki.remove();
      made = undefined;
    },
  };
}

/** Both transports of a test file, for `describe.each(transports.all)('over $name', ...)`; `remove` in its afterAll. */
export function edgeTransports(): { all: readonly EdgeTransport[]; tcp: EdgeTransport; tls: TlsTransport; remove(): void } {
  const tls = createTlsTransport();
  return { all: [TCP, tls], tcp: TCP, tls, remove: () => tls.remove() };
}
