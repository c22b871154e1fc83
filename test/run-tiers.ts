// npm test: every step runs and reports even when an earlier one failed (a flake in one tier hides none of the next); the exit code is 1 if any failed.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = (name: string) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));

/** The steps, in order; `gate`: a step whose failure makes the ones after it meaningless (no system tools: every tier would fail the same way). */
export const STEPS: ReadonlyArray<{ name: string; command: string; args: readonly string[]; gate?: boolean }> = [
  { name: 'system tools', command: process.execPath, args: ['test/provision-system-tools.ts'], gate: true },
  { name: 'tsc --noEmit', command: BIN('tsc'), args: ['--noEmit'] },
  { name: 'biome check', command: BIN('biome'), args: ['check', '--error-on-warnings'] },
  { name: 'tier unit + integration', command: BIN('vitest'), args: ['run', '--project', 'unit', '--project', 'integration'] },
  { name: 'tier processes', command: BIN('vitest'), args: ['run', '--project', 'processes'] },
];

export interface Outcome {
  name: string;
  status: 'passed' | 'failed' | 'not run';
  seconds: number;
}

/** Runs `steps` in order, each whatever the one before did (a failed gate aside); prints the summary; returns the outcomes. */
export function runSteps(steps: typeof STEPS, write: (text: string) => void = (text) => process.stdout.write(text)): Outcome[] {
  const outcomes: Outcome[] = [];
  let gated = false;
  for (const step of steps) {
    if (gated) {
      outcomes.push({ name: step.name, status: 'not run', seconds: 0 });
      continue;
    }
    write(`\n── ${step.name} ──\n`);
    const started = performance.now();
    const result = spawnSync(step.command, step.args, { cwd: ROOT, stdio: 'inherit' });
    const passed = result.status === 0;
    outcomes.push({ name: step.name, status: passed ? 'passed' : 'failed', seconds: (performance.now() - started) / 1000 });
    if (!passed && step.gate) gated = true;
  }
  write('\nnpm test:\n');
  for (const outcome of outcomes) write(`  ${outcome.status.padEnd(7)} ${outcome.name.padEnd(26)} ${outcome.seconds.toFixed(0).padStart(4)} s\n`);
  const failed = outcomes.filter((outcome) => outcome.status !== 'passed');
  write(failed.length === 0 ? 'all steps passed\n' : `${failed.length} step(s) did not pass: ${failed.map((step) => step.name).join(', ')}\n`);
  return outcomes;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = runSteps(STEPS).every((outcome) => outcome.status === 'passed') ? 0 : 1;
}
