// bin/petstore-gateway, what a supervisor runs, starts the gateway exactly as npm start does, in its own process.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import packageJson from '../../../package.json' with { type: 'json' };
import { PROJECT_ROOT, START_ARGS } from '../../../support/start-gateway-process.ts';

const script = readFileSync(join(PROJECT_ROOT, packageJson.bin['petstore-gateway']), 'utf8');
const execLine = script.split('\n').find((line) => line.startsWith('exec node '));

describe('bin/petstore-gateway', () => {
  it('execs node with npm start’s V8 flags and entry point', () => {
    expect(execLine).toBe(`exec node ${START_ARGS.slice(0, -1).join(' ')} "$root/${START_ARGS.at(-1)}" "$@"`);
  });

  it('runs the preflight npm start runs first', () => {
    expect(packageJson.scripts.prestart).toBe('node src/preflight.mjs dist/main.js');
    expect(script).toContain('\nnode "$root/src/preflight.mjs" dist/main.js\n');
  });
});

describe('npm start', () => {
  it('execs node, so the signals npm passes on reach the gateway rather than a shell', () => {
    expect(packageJson.scripts.start.startsWith('exec node ')).toBe(true);
  });
});
