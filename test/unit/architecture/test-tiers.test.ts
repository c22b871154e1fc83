// The processes tier holds every test file that starts the gateway or a CLI through the helpers, and only files that exist.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, it } from 'vitest';
import { PROCESSES } from '../../tiers.ts';

const ROOT = join(import.meta.dirname, '../../..');

/** A call of the helpers that start a gateway process or an operator's CLI, or the gateway's own command line. */
const STARTS_A_PROCESS = /\b(startGatewayProcess|startGatewayGroup|runSignalCase|runKeysCli|runDeprecationsCli|runCli)\(|\.\.\.START_ARGS\b/;

function testFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(ROOT, path)] : [];
  });
}

it('lists every test file that starts the gateway or a CLI as a child process', () => {
  const starting = testFiles(join(ROOT, 'test')).filter((file) => STARTS_A_PROCESS.test(readFileSync(join(ROOT, file), 'utf8')));
  expect(starting.filter((file) => !PROCESSES.includes(file))).toEqual([]);
});

it('lists only test files that exist', () => {
  expect(PROCESSES.filter((file) => !existsSync(join(ROOT, file)))).toEqual([]);
});
