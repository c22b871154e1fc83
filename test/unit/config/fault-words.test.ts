// Each configuration fault once, in the gateway's words, blamed on where its value came from; unreadable files told with the schema's faults.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';

const dir = mkdtempSync(join(tmpdir(), 'fault-words-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const messageOf = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  return 'nothing thrown';
};

describe('configuration faults', () => {
  it('names a rate limit of 0 once, saying what a good one is', () => {
    const message = messageOf(() => loadConfig({}, { rateLimit: { limits: { production: { default: 0 }, staging: { default: 5 } } } }));
    expect(message).toMatch(/^invalid configuration in \S+: rateLimit\.limits\.production\.default: must be greater than 0 \(a whole number such as 60\)$/);
  });

  it('says what an upstream address without a scheme should look like', () => {
    expect(messageOf(() => loadConfig({ UPSTREAM_URL: 'backend:8080/v1' }))).toBe(
      'invalid environment variable UPSTREAM_URL (upstreamUrl): must be an http:// or https:// URL ending in /v1, such as http://petstore-backend.internal/v1',
    );
  });

  it('blames half a TLS pair set in the environment on the variable', () => {
    const certFile = join(dir, 'tls.crt');
    writeFileSync(certFile, 'not read here');
    expect(messageOf(() => loadConfig({ TLS_CERT_FILE: certFile }))).toBe(
      'invalid environment variable TLS_CERT_FILE (listen.tls.certFile): set without keyFile: set certFile and keyFile together (TLS_CERT_FILE and TLS_KEY_FILE): a certificate needs its key',
    );
  });

  it('blames half a TLS pair written in the file on the file', () => {
    const keyFile = join(dir, 'tls.key');
    writeFileSync(keyFile, 'not read here');
    expect(messageOf(() => loadConfig({}, { listen: { adminTls: { keyFile } } }))).toMatch(
      /^invalid configuration in \S+: listen\.adminTls\.keyFile: set without certFile: set certFile and keyFile together \(ADMIN_TLS_CERT_FILE and ADMIN_TLS_KEY_FILE\)/,
    );
  });

  it('names a missing file together with the schema faults, in one pass', () => {
    const message = messageOf(() => loadConfig({ API_KEY_PEPPER_FILE: join(dir, 'no-pepper') }, { listen: { maxInFlight: 0 } }));
    expect(message.split('\n')).toEqual([
      `invalid environment variable API_KEY_PEPPER_FILE (auth.pepperFile): ${join(dir, 'no-pepper')} could not be read (ENOENT)`,
      expect.stringMatching(/^invalid configuration in \S+: listen\.maxInFlight: must be greater than 0/),
    ]);
  });
});
