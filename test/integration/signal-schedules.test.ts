// Property: signals during load. The built gateway, started as `npm start` or bin/petstore-gateway, gets SIGTERM or SIGINT, to its
// process group or to itself, once to three times, while a crowd of hostile clients holds on and a well-behaved client's request
// waits on a slow backend: that request is answered, the repeats are logged and ignored, the process exits 0 (test/edge-harness/signal-*.ts).
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { scaled } from '../../support/time-scale.ts';
import { startEnvironment, type HarnessEnvironment } from '../edge-harness/gateway.ts';
import { runSignalCase } from '../edge-harness/signal-case.ts';
import { signalCase } from '../edge-harness/signal-generators.ts';
import { signalViolations } from '../edge-harness/signal-invariants.ts';
import { killGatewayGroups } from '../helpers/gateway-group.ts';

/** Fixed, so that npm test runs the same schedules every time; `npm run fuzz -- --signals N` explores other seeds. */
const SEED = 20261129;
/** Each case starts a gateway process (about 4 s on a quiet machine): a short run. */
const RUNS = 6;

let environment: HarnessEnvironment;
beforeAll(async () => {
  environment = await startEnvironment(2);
});
afterEach(async () => {
  await killGatewayGroups();
});
afterAll(async () => {
  await environment?.close();
});

it(
  `drains the request in flight, logs and ignores every repeat and exits 0, over ${RUNS} generated signal schedules during load (seed ${SEED})`,
  async () => {
    // fast-check names the seed and the failing schedule; a failure is not shrunk here (each step is a gateway process): npm run fuzz does.
    await fc.assert(
      fc.asyncProperty(signalCase, async (generated) => {
        expect(signalViolations(await runSignalCase(generated, environment))).toEqual([]);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  },
  scaled(RUNS * 30_000),
);
