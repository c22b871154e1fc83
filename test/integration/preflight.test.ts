// npm start, the demo and the CLIs on the wrong Node, or npm start without a build: one line saying what to do, from src/preflight.mjs.
import { execFile, execFileSync } from 'node:child_process';
import { accessSync, constants, cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { PROJECT_ROOT } from '../../support/start-gateway-process.ts';

/** The scripts an operator runs; each has a pre-script that runs the preflight first. */
const OPERATOR_SCRIPTS = ['start', 'demo', 'backend', 'keys', 'deprecations', 'identity-key', 'config'] as const;

/** The Node 24 the tests run on (the `node` dev dependency). */
const NODE_24_BIN = dirname(realpathSync(join(PROJECT_ROOT, 'node_modules/.bin/node')));

/** A `node` older than 24 on this machine outside node_modules (the machine's own), if there is one. */
function oldNode(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/local/bin', '/usr/bin'].filter((dir) => dir && !dir.includes('node_modules'));
  for (const dir of dirs) {
    const candidate = join(dir, 'node');
    try {
      accessSync(candidate, constants.X_OK);
      const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
      if (Number(/^v(\d+)/.exec(version)?.[1]) < 24) return candidate;
    } catch {}
  }
  return undefined;
}
const OLD_NODE = oldNode();

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** npm, found on `path`, and run by the first node there (its `#!/usr/bin/env node`), as an operator's shell would. */
function npm(args: string[], cwd: string, path: string): Promise<Exit> {
  return new Promise((resolve) => {
    execFile('npm', args, { cwd, env: { PATH: path, HOME: cwd, npm_config_update_notifier: 'false' }, timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

/**
 * A production install without the Node 24 dev dependency and without dist/ (`npm prune --omit=dev`
 * before any build): package.json and the sources, no node_modules, so the scripts' `node` is PATH's.
 */
function productionTree(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-preflight-'));
  cpSync(join(PROJECT_ROOT, 'package.json'), join(dir, 'package.json'));
  mkdirSync(join(dir, 'src'));
  cpSync(join(PROJECT_ROOT, 'src/preflight.mjs'), join(dir, 'src/preflight.mjs'));
  return dir;
}

describe('the preflight', () => {
  const dir = productionTree();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs before every operator script', () => {
    const scripts: Record<string, string> = packageJson.scripts;
    for (const name of OPERATOR_SCRIPTS) expect(scripts[`pre${name}`], `pre${name}`).toMatch(/^node src\/preflight\.mjs( |$)/);
  });

  it('stops npm start without a build, saying to run npm run build', async () => {
    const result = await npm(['start'], dir, `${NODE_24_BIN}${delimiter}/usr/bin${delimiter}/bin`);
    expect(result.code).toBe(1);
    expect(result.stderr.split('\n')[0]).toBe(
      'petstore-gateway: dist/main.js does not exist: run `npm run build` first (it compiles src/ to dist/, with the dev dependencies installed)',
    );
    expect(result.stderr).not.toContain('MODULE_NOT_FOUND');
  });

  it.runIf(OLD_NODE).each(OPERATOR_SCRIPTS)('stops npm run %s on an older Node, saying Node 24 is required and which Node it found', async (script) => {
    const version = execFileSync(OLD_NODE!, ['--version'], { encoding: 'utf8' }).trim();
    // The machine's old node first on PATH, as after `npm prune --omit=dev` on a host without Node 24.
    const result = await npm(['run', script], dir, `${dirname(OLD_NODE!)}${delimiter}/usr/bin${delimiter}/bin`);
    expect(result.code).toBe(1);
    expect(result.stderr.split('\n')[0]).toBe(
      `petstore-gateway: Node 24 or later is required, found Node ${version} (${realpathSync(OLD_NODE!)}): install Node 24 (.nvmrc) and put it first on PATH`,
    );
    expect(result.stderr).not.toMatch(/bad option|ERR_UNKNOWN_FILE_EXTENSION/);
  });
});
