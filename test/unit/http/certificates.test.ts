// Certificate pairs and bundles read from real PEM files: every fault names the setting and the file, never the key.
import { X509Certificate } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { readCertificateBundle, readCertificatePair } from '../../../src/http/certificates.ts';
import { createTestPki } from '../../helpers/test-certificates.ts';

const pki = createTestPki();
afterAll(() => pki.remove());
const ca = pki.authority('ca');
const other = pki.authority('other-ca');
const leaf = ca.issue({ name: 'leaf' });
const stranger = ca.issue({ name: 'stranger' });
const settings = { certSetting: 'TLS_CERT_FILE (listen.tls.certFile)', keySetting: 'TLS_KEY_FILE (listen.tls.keyFile)' };

describe('readCertificatePair', () => {
  it("reads a certificate and its key, with the certificate's notAfter and fingerprint", () => {
    const pair = readCertificatePair({ certFile: leaf.certFile, keyFile: leaf.keyFile, ...settings });
    const x509 = new X509Certificate(leaf.cert);
    expect(pair.notAfter).toEqual(new Date(x509.validTo));
    expect(pair.fingerprint).toBe(x509.fingerprint256);
    expect(pair.cert.toString()).toBe(leaf.cert);
  });

  it("refuses a key that is not the certificate's", () => {
    expect(() => readCertificatePair({ certFile: leaf.certFile, keyFile: stranger.keyFile, ...settings })).toThrow(
      `TLS_KEY_FILE (listen.tls.keyFile): the key in ${stranger.keyFile} is not the key of the certificate in ${leaf.certFile}`,
    );
  });

  it('refuses a certificate file that holds no certificate', () => {
    const file = pki.write('not-a-cert.pem', 'hello\n');
    expect(() => readCertificatePair({ certFile: file, keyFile: leaf.keyFile, ...settings })).toThrow(
      `TLS_CERT_FILE (listen.tls.certFile): ${file} holds no PEM certificate`,
    );
  });

  it('refuses a certificate block that does not parse', () => {
    const file = pki.write('broken.pem', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    expect(() => readCertificatePair({ certFile: file, keyFile: leaf.keyFile, ...settings })).toThrow(
      `TLS_CERT_FILE (listen.tls.certFile): certificate 1 of ${file} does not parse`,
    );
  });

  it('refuses a key file that holds no key, without quoting it', () => {
    const file = pki.write('not-a-key.pem', 'secret-looking bytes\n');
    let message = '';
    try {
      readCertificatePair({ certFile: leaf.certFile, keyFile: file, ...settings });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(new RegExp(`^TLS_KEY_FILE \\(listen.tls.keyFile\\): ${file} holds no private key that parses`));
    expect(message).not.toContain('secret-looking');
  });

  it('names a file it cannot read', () => {
    expect(() => readCertificatePair({ certFile: `${pki.dir}/absent.pem`, keyFile: leaf.keyFile, ...settings })).toThrow(
      `TLS_CERT_FILE (listen.tls.certFile): ${pki.dir}/absent.pem cannot be read (ENOENT)`,
    );
  });
});

describe('readCertificateBundle', () => {
  it('returns every certificate of a bundle, in order', () => {
    const file = pki.write('bundle.pem', ca.cert + other.cert);
    const bundle = readCertificateBundle(file, 'UPSTREAM_TLS_CA_FILE (upstreamTls.staging.caFile)');
    expect(bundle.map((pem) => new X509Certificate(pem).subject)).toEqual(['CN=ca', 'CN=other-ca']);
  });
});
