// npm run fuzz -- [--runs N] [--crowds N] [--signals N] [--seed S] [--minutes M] [--tls] (--help lists them): runs the edge property,
// the crowd property and the signal property, prints what they covered and any shrunk counterexample (shrunk for at most M minutes).
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { crowdSpec } from './crowd-generators.ts';
import { crowdViolations, runCrowdCase } from './crowd.ts';
import { buildGateway } from '../../support/start-gateway-process.ts';
import { createTlsTransport, TCP } from '../helpers/edge-transport.ts';
import { killGatewayGroups } from '../helpers/gateway-group.ts';
import { startEnvironment } from './gateway.ts';
import { checkEdgeProperty } from './property.ts';
import { runSignalCase } from './signal-case.ts';
import { signalCase } from './signal-generators.ts';
import { signalViolations } from './signal-invariants.ts';

const USAGE = `usage: npm run fuzz -- [--runs N] [--crowds N] [--signals N] [--seed S] [--minutes M] [--tls]

Runs the edge harness's property on generated cases (hostile clients and upstreams against a gateway and
a private redis-server it starts), prints what it covered, and on a failure the shrunk counterexample,
saved under test/fixtures/edge/ (npm test replays it from there); exits 1 then. Each case picks how the
gateway checks the upstream's answers against the interface document (off, report, enforce); a report
case runs beside an off twin, whose clients' answers it is compared with. Then the crowd property: a
well-behaved client beside generated crowds (never-reading clients, small windows or not, pipelined or
not; slow heads at the connection cap; posters of bodies refused unread that keep sending) must be
answered 200 within its timeout, every poster closed within the lingering close's bounds, and nothing
left in flight; a failing crowd is shrunk and printed. Then, with --signals, the signal property: the
gateway is built (npm run build) and each case starts it as npm start or bin/petstore-gateway, holds a
crowd against it and a request on a slow backend, and sends SIGTERM or SIGINT to its process group or
to it alone, once to three times, during that request and the drain; the request must get its own 200,
the shutdown be logged once, every repeat logged and ignored, no connection accepted once the shutdown
began, and the process exit 0 (test/edge-harness/signal-invariants.ts); a failing case is shrunk and printed.

options:
  --runs N      cases to generate, at most (default 100)
  --crowds N    crowd cases to generate, at most (default 20; 0: none)
  --signals N   signal cases to generate, at most (default 0: none; each starts a gateway process)
  --seed S      the generator's seed, an integer (default: a random one, printed first)
  --minutes M   how long a failing case may be shrunk, at most (default 30)
  --tls         the clients reach an HTTPS listener over TLS (certificates made for the run), some
                of them hostile to TLS itself: cut handshakes, plaintext, renegotiation, close_notify,
                resets and half records
  -h, --help    prints this and exits
`;

/** The command line's options; a wrong one prints the usage and exits 2. */
function fuzzArgs() {
  try {
    return parseArgs({
      options: {
        runs: { type: 'string', default: '100' },
        crowds: { type: 'string', default: '20' },
        signals: { type: 'string', default: '0' },
        seed: { type: 'string' },
        minutes: { type: 'string', default: '30' },
        tls: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (error) {
    console.error(`fuzz: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
    return process.exit(2);
  }
}
const values = fuzzArgs();
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const runs = Number(values.runs);
const crowds = Number(values.crowds);
const signals = Number(values.signals);
const minutes = Number(values.minutes);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (
  !Number.isInteger(runs) ||
  runs < 1 ||
  !Number.isInteger(crowds) ||
  crowds < 0 ||
  !Number.isInteger(signals) ||
  signals < 0 ||
  !Number.isInteger(seed) ||
  !(minutes >= 0)
) {
  console.error(USAGE);
  process.exit(2);
}

const tls = values.tls ? createTlsTransport() : undefined;
const transport = tls ?? TCP;
console.log(`seed ${seed}, up to ${runs} cases over ${transport.name}`);
const environment = await startEnvironment(3);
let failing = 0;
try {
  const report = await checkEdgeProperty(environment, {
    seed,
    numRuns: runs,
    shrinkTimeLimitMs: minutes * 60_000,
    transport,
    onCase: (violations) => {
      if (violations.length > 0) failing++;
    },
  });
  const seconds = report.elapsedMs / 1000;
  console.log(
    `seed ${report.seed}: ${report.casesRun} cases (${failing} failing, ${report.shrinks} shrink steps) in ${seconds.toFixed(1)} s, ${((report.casesRun / seconds) * 60).toFixed(0)} cases/min`,
  );
  if (report.counterexample) {
    console.log(`counterexample saved to ${report.counterexample.fixture}`);
    for (const violation of report.counterexample.violations) {
      console.log(`  (${violation.invariant})${violation.client === undefined ? '' : ` client ${violation.client}`}: ${violation.detail}`);
    }
    process.exitCode = 1;
  } else console.log('no counterexample');
  if (crowds > 0) await checkCrowds();
  if (signals > 0) await checkSignals();
} finally {
  await killGatewayGroups();
  await environment.close();
  tls?.remove();
}

/** The crowd property (over TCP): prints each failing crowd's violations and the shrunk one; exits 1 then. */
async function checkCrowds(): Promise<void> {
  const started = performance.now();
  let crowdsRun = 0;
  const result = await fc.check(
    fc.asyncProperty(crowdSpec, async (spec) => {
      crowdsRun++;
      const violations = crowdViolations(await runCrowdCase(spec, environment));
      if (violations.length > 0) throw new Error(violations.join('; '));
    }),
    { seed, numRuns: crowds, interruptAfterTimeLimit: minutes * 60_000 + crowds * 30_000, markInterruptAsFailure: false },
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(`seed ${seed}: ${crowdsRun} crowd cases (with shrinking) in ${seconds.toFixed(1)} s`);
  if (result.failed) {
    console.log(`crowd counterexample: ${JSON.stringify(result.counterexample?.[0])}`);
    console.log(`  ${result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)}`);
    process.exitCode = 1;
  } else console.log('no crowd counterexample');
}

/** The signal property: prints the shrunk failing schedule and its violations; exits 1 then. */
async function checkSignals(): Promise<void> {
  // The cases start dist/, as npm start does: built from the current sources first.
  buildGateway();
  const started = performance.now();
  let signalsRun = 0;
  const result = await fc.check(
    fc.asyncProperty(signalCase, async (generated) => {
      signalsRun++;
      const violations = signalViolations(await runSignalCase(generated, environment));
      if (violations.length > 0) throw new Error(violations.join('; '));
    }),
    { seed, numRuns: signals, interruptAfterTimeLimit: minutes * 60_000 + signals * 60_000, markInterruptAsFailure: false },
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(`seed ${seed}: ${signalsRun} signal cases (with shrinking) in ${seconds.toFixed(1)} s`);
  if (result.failed) {
    console.log(`signal counterexample: ${JSON.stringify(result.counterexample?.[0])}`);
    console.log(`  ${result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance)}`);
    process.exitCode = 1;
  } else console.log('no signal counterexample');
}
