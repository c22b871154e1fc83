// Where the pepper comes from, and the settings that stop start-up: production without one, both sources, a short one.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadPepper } from '../../../src/auth/pepper.ts';
import { loadConfig } from '../../../src/config/load-config.ts';

const dir = mkdtempSync(join(tmpdir(), 'pepper-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function pepperFile(content: string): string {
  const path = join(dir, `pepper-${Math.random().toString(36).slice(2)}`);
  writeFileSync(path, content);
  return path;
}

const PEPPER = 'a-pepper-of-24-characters';
const config = (env: Record<string, string>) => loadConfig(env);

describe('loadPepper', () => {
  it('reads API_KEY_PEPPER', () => {
    expect(loadPepper(config({ GATEWAY_ENVIRONMENT: 'production' }), { API_KEY_PEPPER: PEPPER })).toBe(PEPPER);
  });

  it('reads the file API_KEY_PEPPER_FILE names, trimmed', () => {
    const env = { GATEWAY_ENVIRONMENT: 'production', API_KEY_PEPPER_FILE: pepperFile(`${PEPPER}\n`) };
    expect(loadPepper(config(env), env)).toBe(PEPPER);
  });

  it('refuses both set, naming both', () => {
    const env = { API_KEY_PEPPER_FILE: pepperFile(PEPPER), API_KEY_PEPPER: PEPPER };
    expect(() => loadPepper(config(env), env)).toThrow('API_KEY_PEPPER and API_KEY_PEPPER_FILE (auth.pepperFile) are both set: set only one');
  });

  it('refuses an API_KEY_PEPPER shorter than 16 characters, as it does a file', () => {
    expect(() => loadPepper(config({}), { API_KEY_PEPPER: 'fifteen-chars-x' })).toThrow('API_KEY_PEPPER: the pepper must be at least 16 characters');
    const env = { API_KEY_PEPPER_FILE: pepperFile('fifteen-chars-x') };
    expect(() => loadPepper(config(env), env)).toThrow('API_KEY_PEPPER_FILE (auth.pepperFile): the pepper must be at least 16 characters');
  });

  it('refuses production without a pepper, naming both settings', () => {
    expect(() => loadPepper(config({ GATEWAY_ENVIRONMENT: 'production' }), {})).toThrow(
      'GATEWAY_ENVIRONMENT is production and no pepper is set: set API_KEY_PEPPER_FILE (auth.pepperFile; a mounted secret) or API_KEY_PEPPER, at least 16 characters (openssl rand -base64 32)',
    );
  });

  it('lets production run without a pepper only with API_KEY_ALLOW_NO_PEPPER=true', () => {
    const production = config({ GATEWAY_ENVIRONMENT: 'production' });
    expect(loadPepper(production, { API_KEY_ALLOW_NO_PEPPER: 'true' })).toBeUndefined();
    expect(() => loadPepper(production, { API_KEY_ALLOW_NO_PEPPER: 'false' })).toThrow('GATEWAY_ENVIRONMENT is production and no pepper is set');
    expect(() => loadPepper(production, { API_KEY_ALLOW_NO_PEPPER: 'yes' })).toThrow('API_KEY_ALLOW_NO_PEPPER: must be true or false, is "yes"');
  });

  it('lets staging run without a pepper (the demo, local work)', () => {
    expect(loadPepper(config({ GATEWAY_ENVIRONMENT: 'staging' }), {})).toBeUndefined();
  });
});
