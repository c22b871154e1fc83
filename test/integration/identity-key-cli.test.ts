// npm run identity-key -- generate: writes a key the gateway loads, readable by its owner only, never over another file.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSigningKey } from '../../src/identity/signing-key.ts';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'identity-key-cli-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function identityKey(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['src/cli/identity-key.ts', ...args],
      { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '' }, timeout: 20_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
  });
}

describe('npm run identity-key', () => {
  it('is the script npm run identity-key runs', () => {
    const { scripts } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(scripts['identity-key']).toBe('node --import ./src/cli/compile-cache.mjs src/cli/identity-key.ts');
  });

  it.each([
    ['ed25519', 'EdDSA'],
    ['es256', 'ES256'],
  ])('generate --algorithm %s writes a PKCS#8 key (mode 0600) that the gateway loads as %s', async (algorithm, alg) => {
    const out = join(dir, `${algorithm}.pem`);
    const result = await identityKey('generate', '--algorithm', algorithm, '--out', out);
    const key = await loadSigningKey(out);
    expect(result).toEqual({ code: 0, stdout: `wrote ${out} (mode 0600): ${alg} signing key, kid ${key.kid}\n`, stderr: '' });
    expect(key.algorithm).toBe(alg);
    expect(readFileSync(out, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(statSync(out).mode & 0o777).toBe(0o600);
  });

  it('prints one JSON line with --json', async () => {
    const out = join(dir, 'json.pem');
    const result = await identityKey('generate', '--algorithm', 'ed25519', '--out', out, '--json');
    const key = await loadSigningKey(out);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ file: out, algorithm: 'EdDSA', kid: key.kid, publicJwk: key.publicJwk });
  });

  it('never overwrites a file (exit 1)', async () => {
    const out = join(dir, 'existing.pem');
    writeFileSync(out, 'keep me');
    const result = await identityKey('generate', '--algorithm', 'ed25519', '--out', out);
    expect(result).toEqual({ code: 1, stdout: '', stderr: `identity-key: ${out} exists; choose another path (a key that signs must never be overwritten)\n` });
    expect(readFileSync(out, 'utf8')).toBe('keep me');
  });

  it.each([
    [['generate', '--algorithm', 'rsa', '--out', 'x.pem'], "option '--algorithm <algorithm>' argument 'rsa' is invalid. Allowed choices are ed25519, es256."],
    [['generate', '--out', 'x.pem'], "required option '--algorithm <algorithm>' not specified"],
    [['generate', '--algorithm', 'ed25519'], "required option '--out <file>' not specified"],
    [['rotate'], "unknown command 'rotate'"],
  ])('exits 2 on the usage error %j', async (args, message) => {
    const result = await identityKey(...args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`identity-key: error: ${message}`);
  });
});
