// The listeners' TLS: a failed handshake named by a closed set of reasons, and a new pair taken up by new connections only.
import { once } from 'node:events';
import type { Server } from 'node:http';
import { connect, type TLSSocket } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { readCertificatePair } from '../../../src/http/certificates.ts';
import { createListenerServer, secureContextOf } from '../../../src/http/node-http.ts';
import { execFileSync } from 'node:child_process';
import { loadConfig } from '../../../src/config/load-config.ts';
import {
  createListenerCertificates,
  handshakeFailureReason,
  listenerTlsOptions,
  readListenerPairs,
  type ListenerPairs,
} from '../../../src/server/listener-tls.ts';
import { createTestPki } from '../../helpers/test-certificates.ts';

const pki = createTestPki();
afterAll(() => pki.remove());
const authority = pki.authority('ca');
const pairOf = (name: string) => {
  const leaf = authority.issue({ name });
  return readCertificatePair({ certFile: leaf.certFile, keyFile: leaf.keyFile, certSetting: 'cert', keySetting: 'key' });
};

describe('handshakeFailureReason', () => {
  it.each([
    ['ERR_SSL_HTTP_REQUEST', 'plain_http'],
    ['ERR_TLS_HANDSHAKE_TIMEOUT', 'timeout'],
    ['ECONNRESET', 'reset'],
    ['ERR_SSL_NO_SHARED_CIPHER', 'no_shared_cipher'],
    ['ERR_SSL_UNSUPPORTED_PROTOCOL', 'protocol_version'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'protocol_version'],
    ['ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', 'certificate_refused'],
    ['ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN', 'certificate_refused'],
    ['ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE', 'certificate_refused'],
    ['ERR_SSL_SOMETHING_ELSE', 'other'],
    [undefined, 'other'],
  ])('%s is %s', (code, reason) => {
    expect(handshakeFailureReason(Object.assign(new Error('x'), { code }))).toBe(reason);
  });
});

describe('createListenerCertificates', () => {
  it('gives new connections the pair taken up, and leaves an open connection on its own', async () => {
    const first = pairOf('first');
    const second = pairOf('second');
    const told: ListenerPairs[] = [];
    const certificates = createListenerCertificates({ listener: first }, (pairs) => told.push(pairs));
    const server: Server = createListenerServer({}, listenerTlsOptions(first));
    server.on('request', (_req, res) => res.end('ok'));
    certificates.attach('listener', secureContextOf(server)!);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    const open = async () => {
      const socket = connect({ port, host: '127.0.0.1', servername: 'localhost', ca: authority.cert });
      await once(socket, 'secureConnect');
      return socket;
    };
    const fingerprint = (socket: TLSSocket) => socket.getPeerCertificate().fingerprint256;
    try {
      const before = await open();
      certificates.takeUp({ listener: second });
      const after = await open();
      expect(fingerprint(before)).toBe(first.fingerprint);
      expect(fingerprint(after)).toBe(second.fingerprint);
      expect(before.destroyed).toBe(false);
      expect(told).toEqual([{ listener: first }, { listener: second }]);
      before.destroy();
      after.destroy();
    } finally {
      server.close();
    }
  });
});

describe('readListenerPairs', () => {
  it('refuses a pair OpenSSL would not serve (an RSA key of 512 bits), before any listener takes it up', () => {
    const keyFile = `${pki.dir}/weak.key`;
    const certFile = `${pki.dir}/weak.pem`;
    execFileSync('openssl', ['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:512', '-out', keyFile], { stdio: 'ignore' });
    execFileSync('openssl', ['req', '-x509', '-new', '-key', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=weak'], { stdio: 'ignore' });
    expect(() => readListenerPairs(loadConfig({ TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile }).listen)).toThrow(
      `TLS_CERT_FILE (listen.tls.certFile): ${certFile} cannot serve TLS: `,
    );
  });
});
