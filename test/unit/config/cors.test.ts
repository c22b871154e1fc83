// cors.allowedOrigins: per environment, CORS_ALLOWED_ORIGINS for the running one, origins checked at start-up naming the key.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DEFAULT_CONFIG_FILE, loadConfig, shadowedByEnvironment } from '../../../src/config/load-config.ts';

const REWRITE = '(scheme://host[:port], lower case, no path, no default port)';

describe('cors.allowedOrigins', () => {
  it('is empty in both environments by default: CORS off', () => {
    expect(loadConfig({}).cors.allowedOrigins).toEqual({ production: [], staging: [] });
  });

  it("takes CORS_ALLOWED_ORIGINS, comma-separated, as the running environment's list", () => {
    const config = loadConfig({ GATEWAY_ENVIRONMENT: 'production', CORS_ALLOWED_ORIGINS: 'https://shop.example, http://localhost:3000' });
    expect(config.cors.allowedOrigins).toEqual({ production: ['https://shop.example', 'http://localhost:3000'], staging: [] });
  });

  it('sets staging when the environment is the default one', () => {
    expect(loadConfig({ CORS_ALLOWED_ORIGINS: 'https://shop.example' }).cors.allowedOrigins.staging).toEqual(['https://shop.example']);
  });

  it('keeps each environment its own list from the file', () => {
    const config = loadConfig({}, { cors: { allowedOrigins: { production: ['https://shop.example'], staging: ['http://localhost:3000'] } } });
    expect(config.cors.allowedOrigins).toEqual({ production: ['https://shop.example'], staging: ['http://localhost:3000'] });
  });

  it("takes '*' alone", () => {
    expect(loadConfig({ CORS_ALLOWED_ORIGINS: '*' }).cors.allowedOrigins.staging).toEqual(['*']);
  });

  it.each([
    [
      { CORS_ALLOWED_ORIGINS: 'https://shop.example/' },
      `invalid environment variable CORS_ALLOWED_ORIGINS (cors.allowedOrigins.staging.0): must be written as a browser sends it ${REWRITE}: https://shop.example`,
    ],
    [
      { GATEWAY_ENVIRONMENT: 'production', CORS_ALLOWED_ORIGINS: 'https://shop.example,HTTP://Admin.Example' },
      `invalid environment variable CORS_ALLOWED_ORIGINS (cors.allowedOrigins.production.1): must be written as a browser sends it ${REWRITE}: http://admin.example`,
    ],
    [
      { CORS_ALLOWED_ORIGINS: 'https://shop.example,' },
      'invalid environment variable CORS_ALLOWED_ORIGINS (cors.allowedOrigins.staging.1): must be an origin: scheme://host[:port]',
    ],
    [
      { CORS_ALLOWED_ORIGINS: '*,https://shop.example' },
      "invalid environment variable CORS_ALLOWED_ORIGINS (cors.allowedOrigins.staging): '*' allows every origin: list it alone or not at all",
    ],
    [
      { CORS_ALLOWED_ORIGINS: 'null' },
      'invalid environment variable CORS_ALLOWED_ORIGINS (cors.allowedOrigins.staging.0): null is the origin of sandboxed frames',
    ],
  ])('refuses %j, naming the variable and the key', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('refuses a bad origin in the file, naming the key', () => {
    expect(() => loadConfig({}, { cors: { allowedOrigins: { production: ['shop.example'] } } })).toThrow(
      `invalid configuration in ${DEFAULT_CONFIG_FILE}: cors.allowedOrigins.production.0: must be an origin: scheme://host[:port]`,
    );
  });

  it('leaves the lists alone when the environment is unknown, which is reported', () => {
    expect(() => loadConfig({ GATEWAY_ENVIRONMENT: 'prod', CORS_ALLOWED_ORIGINS: 'https://shop.example' })).toThrow(
      /^invalid environment variable GATEWAY_ENVIRONMENT \(environment\): [^\n]*$/,
    );
  });

  it("says a reload keeps the variable's list over the file's, for the running environment", () => {
    const dir = mkdtempSync(join(tmpdir(), 'cors-config-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, 'environment: production\ncors:\n  allowedOrigins:\n    production: [https://old.example]\n');
    expect(shadowedByEnvironment({ GATEWAY_CONFIG: file, CORS_ALLOWED_ORIGINS: 'https://shop.example' })).toEqual([
      { variable: 'CORS_ALLOWED_ORIGINS', key: 'cors.allowedOrigins.production' },
    ]);
    expect(shadowedByEnvironment({ GATEWAY_CONFIG: file, CORS_ALLOWED_ORIGINS: 'https://old.example' })).toEqual([]);
  });
});
