// Property: for generated clients and upstream behaviours, the gateway's HTTP edge holds its invariants (test/edge-harness/).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEnvironment, type HarnessEnvironment } from '../edge-harness/gateway.ts';
import { checkEdgeProperty } from '../edge-harness/property.ts';

/** Fixed, so that npm test runs the same cases every time; `npm run fuzz` explores other seeds. */
const SEED = 20261124;
const RUNS = 60;

let environment: HarnessEnvironment;

beforeAll(async () => {
  environment = await startEnvironment(3);
});
afterAll(async () => {
  await environment?.close();
});

it(`holds every edge invariant over ${RUNS} generated cases (seed ${SEED})`, async () => {
  // The time limit bounds only the shrinking of a failed case; a passing run always runs every case.
  const report = await checkEdgeProperty(environment, { seed: SEED, numRuns: RUNS, shrinkTimeLimitMs: 60_000 });
  const found = report.counterexample;
  expect(found?.violations ?? [], found ? `shrunk counterexample saved to ${found.fixture}` : undefined).toEqual([]);
  expect(report.casesRun).toBe(RUNS);
}, 300_000);
