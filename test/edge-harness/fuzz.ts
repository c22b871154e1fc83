// npm run fuzz -- --runs N [--seed S] [--minutes M]: runs the edge property, prints what it covered and any shrunk counterexample (shrunk for at most M minutes).
import { parseArgs } from 'node:util';
import { startEnvironment } from './gateway.ts';
import { checkEdgeProperty } from './property.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '100' },
    seed: { type: 'string' },
    minutes: { type: 'string', default: '30' },
  },
});
const runs = Number(values.runs);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) {
  console.error('usage: npm run fuzz -- --runs N [--seed S] [--minutes M]');
  process.exit(2);
}

console.log(`seed ${seed}, up to ${runs} cases`);
const environment = await startEnvironment(3);
let failing = 0;
try {
  const report = await checkEdgeProperty(environment, {
    seed,
    numRuns: runs,
    shrinkTimeLimitMs: Number(values.minutes) * 60_000,
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
}
