// npm run fuzz -- [--runs N] [--seed S] [--minutes M] [--tls] (--help lists them): runs the edge property, prints what it covered and any shrunk counterexample (shrunk for at most M minutes).
import { parseArgs } from 'node:util';
import { createTlsTransport, TCP } from '../helpers/edge-transport.ts';
import { startEnvironment } from './gateway.ts';
import { checkEdgeProperty } from './property.ts';

const USAGE = `usage: npm run fuzz -- [--runs N] [--seed S] [--minutes M] [--tls]

Runs the edge harness's property on generated cases (hostile clients and upstreams against a gateway and
a private redis-server it starts), prints what it covered, and on a failure the shrunk counterexample,
saved under test/fixtures/edge/ (npm test replays it from there); exits 1 then. Each case picks how the
gateway checks the upstream's answers against the interface document (off, report, enforce); a report
case runs beside an off twin, whose clients' answers it is compared with.

options:
  --runs N      cases to generate, at most (default 100)
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
const minutes = Number(values.minutes);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed) || !(minutes >= 0)) {
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
} finally {
  await environment.close();
  tls?.remove();
}
