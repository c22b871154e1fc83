// Property: for generated clients and upstream behaviours, the gateway's HTTP edge holds its invariants (test/edge-harness/), over TCP and TLS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeTransports, type TransportName } from '../helpers/edge-transport.ts';
import { startEnvironment, type HarnessEnvironment } from '../edge-harness/gateway.ts';
import fc from 'fast-check';
import { crowdSpec } from '../edge-harness/crowd-generators.ts';
import { crowdViolations, runCrowdCase } from '../edge-harness/crowd.ts';
import { checkEdgeProperty } from '../edge-harness/property.ts';

/** Fixed, so that npm test runs the same cases every time; `npm run fuzz` explores other seeds. */
const SEED = 20261124;
/**
 * Cases per transport: as many over TLS, whose clients come from a wider generator (close_notify, resets, half records, cut
 * handshakes, plaintext on the TLS port, renegotiation); a TLS case costs about what a TCP one does.
 */
const RUNS: Readonly<Record<TransportName, number>> = { tcp: 60, tls: 60 };

const transports = edgeTransports();
let environment: HarnessEnvironment;

beforeAll(async () => {
  environment = await startEnvironment(3);
});
afterAll(async () => {
  await environment?.close();
  transports.remove();
});

describe.each(transports.all)('over $name', (transport) => {
  const runs = RUNS[transport.name];
  it(`holds every edge invariant over ${runs} generated cases (seed ${SEED})`, async () => {
    // The time limit bounds only the shrinking of a failed case; a passing run always runs every case.
    const report = await checkEdgeProperty(environment, { seed: SEED, numRuns: runs, shrinkTimeLimitMs: 60_000, transport });
    const found = report.counterexample;
    expect(found?.violations ?? [], found ? `shrunk counterexample saved to ${found.fixture}` : undefined).toEqual([]);
    expect(report.casesRun).toBe(runs);
  }, 300_000);
});

/** Crowd cases (a short run: `npm run fuzz` runs more): each holds up to 118 hostile connections for a few seconds. */
const CROWD_RUNS = 8;

describe('a well-behaved client beside a crowd of never-reading clients, slow heads and posters refused unread', () => {
  it(`is answered 200 within its timeout, the posters closed within the lingering close's bounds, and nothing stays in flight, over ${CROWD_RUNS} generated crowds (seed ${SEED})`, async () => {
    await fc.assert(
      fc.asyncProperty(crowdSpec, async (spec) => {
        expect(crowdViolations(await runCrowdCase(spec, environment))).toEqual([]);
      }),
      { seed: SEED, numRuns: CROWD_RUNS, endOnFailure: true },
    );
  }, 300_000);
});
