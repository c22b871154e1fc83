// listen.tls, listen.adminTls, upstreamTls and certificates: their variables, defaults and the pairs set together.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';

describe('TLS settings', () => {
  it('leaves both listeners plain HTTP and the backends on Node defaults by default', () => {
    const config = loadConfig({});
    expect(config.listen.tls).toEqual({ certFile: null, keyFile: null });
    expect(config.listen.adminTls).toEqual({ certFile: null, keyFile: null });
    expect(config.upstreamTls.staging).toEqual({ caFile: null, caMode: 'replace', certFile: null, keyFile: null, servername: null, minVersion: 'TLSv1.2' });
    expect(config.certificates.watchIntervalMs).toBe(10_000);
  });

  it('takes the listener pairs from TLS_* and ADMIN_TLS_*', () => {
    const config = loadConfig({ TLS_CERT_FILE: 'l.pem', TLS_KEY_FILE: 'l.key', ADMIN_TLS_CERT_FILE: 'a.pem', ADMIN_TLS_KEY_FILE: 'a.key' });
    expect(config.listen.tls).toEqual({ certFile: 'l.pem', keyFile: 'l.key' });
    expect(config.listen.adminTls).toEqual({ certFile: 'a.pem', keyFile: 'a.key' });
  });

  it("sets the running environment's upstream TLS from UPSTREAM_TLS_*", () => {
    const config = loadConfig({
      GATEWAY_ENVIRONMENT: 'production',
      UPSTREAM_TLS_CA_FILE: 'ca.pem',
      UPSTREAM_TLS_CA_MODE: 'add',
      UPSTREAM_TLS_CERT_FILE: 'c.pem',
      UPSTREAM_TLS_KEY_FILE: 'c.key',
      UPSTREAM_TLS_SERVERNAME: 'pets.internal',
      UPSTREAM_TLS_MIN_VERSION: 'TLSv1.3',
      CERTIFICATE_WATCH_MS: '0',
    });
    expect(config.upstreamTls.production).toEqual({
      caFile: 'ca.pem',
      caMode: 'add',
      certFile: 'c.pem',
      keyFile: 'c.key',
      servername: 'pets.internal',
      minVersion: 'TLSv1.3',
    });
    expect(config.upstreamTls.staging.caFile).toBeNull();
    expect(config.certificates.watchIntervalMs).toBe(0);
  });

  it.each<Record<string, string>>([{ TLS_CERT_FILE: 'l.pem' }, { ADMIN_TLS_KEY_FILE: 'a.key' }, { UPSTREAM_TLS_CERT_FILE: 'c.pem' }])(
    'refuses a certificate without its key, or a key without its certificate (%o)',
    (env) => {
      expect(() => loadConfig(env)).toThrow('set certFile and keyFile together');
    },
  );

  it('refuses a minimum version below TLS 1.2', () => {
    expect(() => loadConfig({ UPSTREAM_TLS_MIN_VERSION: 'TLSv1.1' })).toThrow('UPSTREAM_TLS_MIN_VERSION (upstreamTls.staging.minVersion)');
  });
});
