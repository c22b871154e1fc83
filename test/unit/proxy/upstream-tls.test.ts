// The running environment's upstream TLS read from its files, as a connection's options; refused where it would not apply.
import { getCACertificates } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { readUpstreamTls, upstreamTlsFiles } from '../../../src/proxy/upstream-tls.ts';
import { createTestPki } from '../../helpers/test-certificates.ts';

const pki = createTestPki();
afterAll(() => pki.remove());
const ca = pki.authority('ca');
const client = ca.issue({ name: 'client' });
const HTTPS = { UPSTREAM_URL: 'https://pets.internal:8443/v1' };

describe('readUpstreamTls', () => {
  it("is Node's defaults with TLS 1.2 at least and verification on when nothing is set", () => {
    expect(readUpstreamTls(loadConfig(HTTPS))).toEqual({ connect: { minVersion: 'TLSv1.2', rejectUnauthorized: true } });
  });

  it('trusts only the CA file in replace mode, and adds it to the default store in add mode', () => {
    const replaced = readUpstreamTls(loadConfig({ ...HTTPS, UPSTREAM_TLS_CA_FILE: ca.certFile }));
    expect(replaced.connect.ca).toEqual([ca.cert]);
    const added = readUpstreamTls(loadConfig({ ...HTTPS, UPSTREAM_TLS_CA_FILE: ca.certFile, UPSTREAM_TLS_CA_MODE: 'add' }));
    expect(added.connect.ca).toEqual([...getCACertificates('default'), ca.cert]);
  });

  it('offers the client certificate, with its notAfter, and the server name', () => {
    const tls = readUpstreamTls(
      loadConfig({ ...HTTPS, UPSTREAM_TLS_CERT_FILE: client.certFile, UPSTREAM_TLS_KEY_FILE: client.keyFile, UPSTREAM_TLS_SERVERNAME: 'pets.example' }),
    );
    expect(tls.connect.cert?.toString()).toBe(client.cert);
    expect(tls.connect.key?.toString()).toBe(client.key);
    expect(tls.connect.servername).toBe('pets.example');
    expect(tls.clientNotAfter).toBeInstanceOf(Date);
  });

  it("names the variable of a client key that is not the certificate's", () => {
    const other = ca.issue({ name: 'other' });
    expect(() => readUpstreamTls(loadConfig({ ...HTTPS, UPSTREAM_TLS_CERT_FILE: client.certFile, UPSTREAM_TLS_KEY_FILE: other.keyFile }))).toThrow(
      /^UPSTREAM_TLS_KEY_FILE \(upstreamTls\.staging\.keyFile\): the key in /,
    );
  });

  it('refuses TLS settings for an upstream spoken to in plain HTTP', () => {
    expect(() => readUpstreamTls(loadConfig({ UPSTREAM_URL: 'http://pets.internal/v1', UPSTREAM_TLS_CA_FILE: ca.certFile }))).toThrow(
      'UPSTREAM_TLS_CA_FILE (upstreamTls.staging.caFile): set, but the upstream of contract (http://pets.internal/v1, from UPSTREAM_URL (upstreamUrl)) is plain http://; use its https:// address there, or unset them',
    );
  });

  it('lists the files it reads, for the certificate watch', () => {
    const config = loadConfig({ ...HTTPS, UPSTREAM_TLS_CA_FILE: ca.certFile, UPSTREAM_TLS_CERT_FILE: client.certFile, UPSTREAM_TLS_KEY_FILE: client.keyFile });
    expect(upstreamTlsFiles(config)).toEqual([ca.certFile, client.certFile, client.keyFile]);
  });
});
