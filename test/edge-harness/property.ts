// The property over generated cases: fast-check runs and shrinks, and the shrunk counterexample is saved as a fixture.
import fc from 'fast-check';
import { TCP, type EdgeTransport } from '../helpers/edge-transport.ts';
import { edgeCaseOver } from './case-generator.ts';
import { saveFixture } from './fixtures.ts';
import type { HarnessEnvironment } from './gateway.ts';
import { runCase } from './run-case.ts';
import type { EdgeCase } from './script.ts';
import type { Violation } from './violations.ts';

export interface PropertyOptions {
  seed: number;
  numRuns: number;
  /**
   * Shrinking stops after this long (the counterexample shrunk so far is kept). Generation is never cut
   * short: a passing run always runs `numRuns` cases, however slow the machine.
   */
  shrinkTimeLimitMs: number;
  /** Told after each case. */
  onCase?: (violations: readonly Violation[]) => void;
  /** What the clients reach the gateway over (default plain TCP); TLS cases add clients hostile to TLS itself. */
  transport?: EdgeTransport;
}

export interface PropertyReport {
  seed: number;
  casesRun: number;
  shrinks: number;
  elapsedMs: number;
  counterexample?: { edgeCase: EdgeCase; violations: Violation[]; fixture: string };
}

export async function checkEdgeProperty(environment: HarnessEnvironment, options: PropertyOptions): Promise<PropertyReport> {
  const started = performance.now();
  let casesRun = 0;
  // Shrinking only moves to failing cases, so the last failing case run is the shrunk counterexample.
  let lastFailure: { edgeCase: EdgeCase; violations: Violation[] } | undefined;
  const transport = options.transport ?? TCP;
  const property = fc.asyncProperty(edgeCaseOver(transport.name), async (generated) => {
    casesRun++;
    let violations: Violation[];
    try {
      ({ violations } = await runCase(generated, environment, transport));
    } catch (error) {
      // Not a finding about the gateway, but never silent: the case is reported with why it could not run.
      violations = [{ invariant: 'e', detail: `the case could not run: ${error instanceof Error ? error.message : String(error)}` }];
    }
    options.onCase?.(violations);
    if (violations.length === 0) return true;
    lastFailure = { edgeCase: generated, violations };
    return false;
  });
  // First every case, stopping at the first failure; then that failure, replayed by its path, shrunk within the time limit.
  const run = await fc.check(property, { seed: options.seed, numRuns: options.numRuns, endOnFailure: true });
  const shrunk =
    run.failed && run.counterexamplePath !== null
      ? await fc.check(property, { seed: options.seed, path: run.counterexamplePath, interruptAfterTimeLimit: options.shrinkTimeLimitMs })
      : undefined;
  const report: PropertyReport = { seed: options.seed, casesRun, shrinks: shrunk?.numShrinks ?? 0, elapsedMs: performance.now() - started };
  if (!run.failed || lastFailure === undefined) return report;
  const details = shrunk?.failed ? shrunk : run;
  const fixture = saveFixture({
    description: `Shrunk by fast-check (seed ${options.seed}, over ${transport.name}); the violations are the shrunk case's.`,
    found: {
      seed: options.seed,
      path: details.counterexamplePath,
      at: new Date().toISOString(),
      ...(transport.name === 'tls' ? { transport: 'tls' as const } : {}),
    },
    violations: lastFailure.violations,
    case: lastFailure.edgeCase,
  });
  return { ...report, counterexample: { ...lastFailure, fixture } };
}
