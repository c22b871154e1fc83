// Instructions per request, counted: each variant's gateway runs under valgrind's callgrind, which counts
// the instructions every thread executes whatever else the machine does (CPU steal and other tenants move
// the time a request takes, not its count). For telling two builds apart by less than the spread of CPU
// time between processes (docs/performance.md, "How it is measured"); it does not see the kernel (system calls,
// the loopback) nor cache misses, so it is read beside bench/tracecost.ts, not instead of it.
//   node bench/instructions.ts [variant...]   variants as bench/gateway-variants.ts reads them (default: off traced)
// Every variant runs at once, each on its own CPU in turn, under load from `wrk -c8` for INSTRUCTIONS_WARM_S
// (default 120: under valgrind a gateway serves 40-80 requests a second, enough for the untraced gateway's
// hot code to be mostly compiled, not the traced one's, which needs longer); then each round counts
// INSTRUCTIONS_DURATION_S (default 20) of load, INSTRUCTIONS_ROUNDS (default 3) rounds. Reported per variant: the median over rounds of instructions per
// request, without V8's optimising compiler and garbage collection (they come in bursts that a round
// catches or misses: printed apart), then by part (JIT code, V8's builtins, V8's runtime, libc, the rest).
// INSTRUCTIONS_KEEP=<dir> keeps the callgrind files (read them with callgrind_annotate). BENCH_TARGET and
// BENCH_BACKEND_PETS change what is asked and how large the answers are (bench/gateway-variants.ts, bench/backend.ts).
// INSTRUCTIONS_LOAD=keep-alive: one load on connections kept from before the first round to after the last, each round
// a window of it (for TLS variants: no handshake in the counts); by default each round is a wrk run on new connections.
// INSTRUCTIONS_NAME=<name> also writes every round's counts to bench/results/<date>-<name>.json.
// A variant's `,BENCH_RELOAD_AFTER_WARM=<file>` (with its own `,GATEWAY_CONFIG=<file>`) is reloaded (SIGHUP) with that file once warm:
// warm a rare path at a setting that takes it always (shadow.sample 1), count it at the rare one (0.01). INSTRUCTIONS_RELOAD_SETTLE_S
// (default 150) of load follow the reload, and the variants it is compared with should reload too (BENCH_RELOAD_AFTER_WARM=<their
// own file>). A long INSTRUCTIONS_WARM_S at the rare setting itself counts it with less noise.
// The counting itself is bench/instruction-count.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseVariants, startBench } from './gateway-variants.ts';
import { countInstructions, valgrindProblem } from './instruction-count.ts';
import { runNameProblem, runOrigin, writeRunResults } from './results-file.ts';

// --help prints the comment above (what it counts, its arguments and variables); an option it does not know is a usage error.
const options = process.argv.slice(2).filter((arg) => arg.startsWith('-'));
if (options.length > 0) {
  const usage = readFileSync(fileURLToPath(import.meta.url), 'utf8')
    .split('\n')
    .filter((_, index, lines) => lines.slice(0, index + 1).every((above) => above.startsWith('//')))
    .map((line) => line.replace(/^\/\/ ?/, ''))
    .join('\n');
  const help = options.every((option) => option === '--help' || option === '-h');
  if (!help) process.stderr.write(`bench/instructions.ts: unknown option ${options.find((option) => option !== '--help' && option !== '-h')}\n\n`);
  (help ? process.stdout : process.stderr).write(`${usage}\n`);
  process.exit(help ? 0 : 2);
}

const ROUNDS = Number(process.env.INSTRUCTIONS_ROUNDS ?? 3);
const DURATION_S = Number(process.env.INSTRUCTIONS_DURATION_S ?? 20);
const WARM_S = Number(process.env.INSTRUCTIONS_WARM_S ?? 120);
const LOAD = process.env.INSTRUCTIONS_LOAD === 'keep-alive' ? 'keep-alive' : 'wrk';
const NAME = process.env.INSTRUCTIONS_NAME || undefined;
const RELOAD_SETTLE_S = Number(process.env.INSTRUCTIONS_RELOAD_SETTLE_S || 150);
if (!Number.isFinite(RELOAD_SETTLE_S) || RELOAD_SETTLE_S < 0) {
  process.stderr.write(`INSTRUCTIONS_RELOAD_SETTLE_S must be a number of seconds, got ${process.env.INSTRUCTIONS_RELOAD_SETTLE_S}\n`);
  process.exit(2);
}
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STARTED = new Date();
/** What is measured is the build at the start (dist/ is built then): its commit, not the one at the end. */
const ORIGIN = runOrigin(ROOT, STARTED);
if (NAME !== undefined && runNameProblem(NAME) !== undefined) {
  process.stderr.write(`INSTRUCTIONS_NAME ${NAME}: ${runNameProblem(NAME)}\n`);
  process.exit(2);
}

const problem = valgrindProblem();
if (problem !== undefined) {
  process.stderr.write(`bench/instructions.ts needs ${problem}\n`);
  process.exit(2);
}
const variants = parseVariants(process.argv.slice(2));
const bench = await startBench();
const outDir = process.env.INSTRUCTIONS_KEEP || join(bench.workDir, 'callgrind');

try {
  const counts = await countInstructions(bench, variants, {
    warmS: WARM_S,
    durationS: DURATION_S,
    rounds: ROUNDS,
    outDir,
    load: LOAD,
    reloadSettleS: RELOAD_SETTLE_S,
    progress: (line) => process.stdout.write(`${line}\n`),
  });
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const base = median(counts[0]!.steady);
  const k = (value: number) => `${(value / 1000).toFixed(1)}k`;
  for (const [index, variant] of variants.entries()) {
    const count = counts[index]!;
    const steady = median(count.steady);
    const byPart = [...count.parts]
      .filter(([part]) => part !== 'compiler' && part !== 'gc')
      .sort((a, b) => b[1] - a[1])
      .map(([part, instructions]) => `${part} ${k(instructions / count.requests)}`)
      .join(', ');
    process.stdout.write(
      `${variant.spec.padEnd(32)} ${k(steady)} instructions/req (×${(steady / base).toFixed(3)}; rounds ${count.steady.map(k).join(' ')}); apart: compiler ${count.compiler.map(k).join(' ')}, gc ${count.gc.map(k).join(' ')}\n${''.padEnd(33)}${byPart}\n`,
    );
  }
  if (NAME !== undefined) {
    const file = writeRunResults(join(ROOT, 'bench/results'), NAME, STARTED, {
      ...ORIGIN,
      bench: 'instructions',
      settings: { warmS: WARM_S, durationS: DURATION_S, rounds: ROUNDS, load: LOAD, reloadSettleS: RELOAD_SETTLE_S },
      variants: variants.map((variant, index) => ({
        spec: variant.spec,
        steadyPerRequest: counts[index]!.steady,
        compilerPerRequest: counts[index]!.compiler,
        gcPerRequest: counts[index]!.gc,
        failedAnswers: counts[index]!.failed,
        byPartPerRequest: Object.fromEntries([...counts[index]!.parts].map(([part, count]) => [part, count / counts[index]!.requests])),
      })),
    });
    process.stdout.write(`results: ${file}\n`);
  }
  if (process.env.INSTRUCTIONS_KEEP) process.stdout.write(`callgrind files in ${outDir}\n`);
} finally {
  bench.close();
}
