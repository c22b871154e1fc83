// npm test's runner: a failed tier hides none of the next, and the run still fails.
import { describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { runSteps, STEPS } from '../run-tiers.ts';

const quiet = () => undefined;

describe('npm test', () => {
  it('runs every tier after one that failed, and reports each', () => {
    const outcomes = runSteps(
      [
        { name: 'first', command: 'false', args: [] },
        { name: 'second', command: 'true', args: [] },
      ],
      quiet,
    );
    expect(outcomes.map((outcome) => [outcome.name, outcome.status])).toEqual([
      ['first', 'failed'],
      ['second', 'passed'],
    ]);
  });

  it('stops after a failed gate (no system tools: every tier would fail alike)', () => {
    const outcomes = runSteps(
      [
        { name: 'tools', command: 'false', args: [], gate: true },
        { name: 'tier', command: 'true', args: [] },
      ],
      quiet,
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['failed', 'not run']);
  });

  it('is the command npm test runs, with every tier of vitest.config.ts', () => {
    expect(packageJson.scripts.test).toBe('node test/run-tiers.ts');
    const projects = STEPS.flatMap((step) => step.args.filter((_, i) => step.args[i - 1] === '--project'));
    expect(projects).toEqual(['unit', 'integration', 'processes']);
  });
});
