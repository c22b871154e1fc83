// The backends' TLS read from its files, as a connection's options: the running environment's, and staging's for shadows; refused where it would not apply.
import { getCACertificates } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { readBackendTls, upstreamTlsFiles } from '../../../src/proxy/upstream-tls.ts';
import { createTestPki } from '../../helpers/test-certificates.ts';

const pki = createTestPki();
afterAll(() => pki.remove());
const ca = pki.authority('ca');
const client = ca.issue({ name: 'client' });
const HTTPS = { UPSTREAM_URL: 'https://pets.internal:8443/v1' };

describe('readBackendTls', () => {
  it("is Node's defaults with TLS 1.2 at least and verification on when nothing is set", () => {
    expect(readBackendTls(loadConfig(HTTPS))).toEqual({ connect: { minVersion: 'TLSv1.2', rejectUnauthorized: true } });
  });

  it('trusts only the CA file in replace mode, and adds it to the default store in add mode', () => {
    const replaced = readBackendTls(loadConfig({ ...HTTPS, UPSTREAM_TLS_CA_FILE: ca.certFile }));
    expect(replaced.connect.ca).toEqual([ca.cert]);
    const added = readBackendTls(loadConfig({ ...HTTPS, UPSTREAM_TLS_CA_FILE: ca.certFile, UPSTREAM_TLS_CA_MODE: 'add' }));
    expect(added.connect.ca).toEqual([...getCACertificates('default'), ca.cert]);
  });

  it('offers the client certificate, with its notAfter, and the server name', () => {
    const tls = readBackendTls(
      loadConfig({ ...HTTPS, UPSTREAM_TLS_CERT_FILE: client.certFile, UPSTREAM_TLS_KEY_FILE: client.keyFile, UPSTREAM_TLS_SERVERNAME: 'pets.example' }),
    );
    expect(tls.connect.cert?.toString()).toBe(client.cert);
    expect(tls.connect.key?.toString()).toBe(client.key);
    expect(tls.connect.servername).toBe('pets.example');
    expect(tls.clientNotAfter).toBeInstanceOf(Date);
  });

  it("names the variable of a client key that is not the certificate's", () => {
    const other = ca.issue({ name: 'other' });
    expect(() => readBackendTls(loadConfig({ ...HTTPS, UPSTREAM_TLS_CERT_FILE: client.certFile, UPSTREAM_TLS_KEY_FILE: other.keyFile }))).toThrow(
      /^UPSTREAM_TLS_KEY_FILE \(upstreamTls\.staging\.keyFile\): the key in /,
    );
  });

  it('refuses TLS settings for an upstream spoken to in plain HTTP', () => {
    expect(() => readBackendTls(loadConfig({ UPSTREAM_URL: 'http://pets.internal/v1', UPSTREAM_TLS_CA_FILE: ca.certFile }))).toThrow(
      'UPSTREAM_TLS_CA_FILE (upstreamTls.staging.caFile): set, but the upstream of contract (http://pets.internal/v1, from UPSTREAM_URL (upstreamUrl)) is plain http://; use its https:// address there, or unset them',
    );
  });

  it('lists the files it reads, for the certificate watch', () => {
    const config = loadConfig({ ...HTTPS, UPSTREAM_TLS_CA_FILE: ca.certFile, UPSTREAM_TLS_CERT_FILE: client.certFile, UPSTREAM_TLS_KEY_FILE: client.keyFile });
    expect(upstreamTlsFiles(config)).toEqual([ca.certFile, client.certFile, client.keyFile]);
  });

  describe("staging's, for the shadow pool of a production gateway", () => {
    const PRODUCTION = { ...HTTPS, GATEWAY_ENVIRONMENT: 'production' };
    /** Shadowing to an https:// staging: where upstreamTls.staging applies. */
    const SHADOWING = { ...PRODUCTION, SHADOW_UPSTREAM_URL: 'https://staging.pets.internal:8443/v1' };
    const stagingTls = { upstreamTls: { staging: { caFile: ca.certFile, certFile: client.certFile, keyFile: client.keyFile, servername: 'staging.pets' } } };

    it('is read from upstreamTls.staging while shadowing is on', () => {
      const tls = readBackendTls(loadConfig({ ...SHADOWING, SHADOW_SAMPLE: '0.5' }, stagingTls));
      expect(tls.connect).toEqual({ minVersion: 'TLSv1.2', rejectUnauthorized: true });
      expect(tls.shadow).toEqual({
        ca: [ca.cert],
        cert: Buffer.from(client.cert),
        key: Buffer.from(client.key),
        servername: 'staging.pets',
        minVersion: 'TLSv1.2',
        rejectUnauthorized: true,
      });
    });

    it('is neither read nor watched while shadowing is off', () => {
      const config = loadConfig(PRODUCTION, { upstreamTls: { staging: { caFile: '/nowhere/ca.pem' } } });
      expect(readBackendTls(config)).toEqual({ connect: { minVersion: 'TLSv1.2', rejectUnauthorized: true } });
      expect(upstreamTlsFiles(config)).toEqual([]);
    });

    it('refuses a bad file, naming the setting by its key (no variable sets it)', () => {
      const other = ca.issue({ name: 'other' });
      const config = loadConfig({ ...SHADOWING, SHADOW_SAMPLE: '1' }, { upstreamTls: { staging: { certFile: client.certFile, keyFile: other.keyFile } } });
      expect(() => readBackendTls(config)).toThrow(/^upstreamTls\.staging\.keyFile: the key in /);
    });

    it('refuses them for a shadow upstream spoken to in plain HTTP, naming SHADOW_UPSTREAM_URL', () => {
      const config = loadConfig({ ...PRODUCTION, SHADOW_SAMPLE: '0.5', SHADOW_UPSTREAM_URL: 'http://staging.pets.internal/v1' }, stagingTls);
      expect(() => readBackendTls(config)).toThrow(
        'upstreamTls.staging.caFile, upstreamTls.staging.certFile, upstreamTls.staging.keyFile, upstreamTls.staging.servername: set, but the shadow upstream of contract (http://staging.pets.internal/v1, from SHADOW_UPSTREAM_URL (shadow.upstreamUrl)) is plain http://; use its https:// address there, or unset them',
      );
    });

    it("refuses them for staging's own plain upstream, the shadow target without SHADOW_UPSTREAM_URL", () => {
      const config = loadConfig(
        { ...PRODUCTION, SHADOW_SAMPLE: '0.5' },
        { ...stagingTls, environments: { staging: { upstream: 'http://staging.pets.internal/v1' } } },
      );
      expect(() => readBackendTls(config)).toThrow(
        /: set, but the shadow upstream of contract \(http:\/\/staging\.pets\.internal\/v1, from environments\.staging\.upstream\) is plain http:\/\//,
      );
    });

    it("refuses a staging gateway's own settings for its plain shadow upstream", () => {
      const config = loadConfig({
        ...HTTPS,
        GATEWAY_ENVIRONMENT: 'staging',
        UPSTREAM_TLS_CA_FILE: ca.certFile,
        SHADOW_SAMPLE: '0.5',
        SHADOW_UPSTREAM_URL: 'http://canary.pets.internal/v1',
      });
      expect(() => readBackendTls(config)).toThrow(
        'UPSTREAM_TLS_CA_FILE (upstreamTls.staging.caFile): set, but the shadow upstream of contract (http://canary.pets.internal/v1, from SHADOW_UPSTREAM_URL (shadow.upstreamUrl)) is plain http://; use its https:// address there, or unset them',
      );
    });

    it('leaves them alone for a plain staging while shadowing is off: nothing would use them', () => {
      const config = loadConfig({ ...PRODUCTION, SHADOW_UPSTREAM_URL: 'http://staging.pets.internal/v1' }, stagingTls);
      expect(readBackendTls(config)).toEqual({ connect: { minVersion: 'TLSv1.2', rejectUnauthorized: true } });
    });

    it("adds staging's files to the certificate watch while shadowing is on", () => {
      const config = loadConfig({ ...SHADOWING, SHADOW_SAMPLE: '0.01', UPSTREAM_TLS_CA_FILE: ca.certFile }, stagingTls);
      expect(upstreamTlsFiles(config)).toEqual([ca.certFile, client.certFile, client.keyFile]);
    });
  });
});
