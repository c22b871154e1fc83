// What tracing costs, quickly: the gateway with every feature on, tracing off and traced (always_on, OTLP/HTTP
// protobuf to bench/otlp-sink.ts), saturated by wrk in alternated runs; CPU per request from /proc. The full
// `npm run bench` measures the same pair among other targets; this one is for iterating on the traced path.
//   node bench/tracecost.ts [variant...]   variants as bench/gateway-variants.ts reads them (default: off traced)
// Reported: each variant's median and its ratio to the first's, and the median of each round's own ratio,
// which with many short rounds (TRACECOST_ROUNDS=30 TRACECOST_DURATION_S=2) resolves what the machine's
// drift hides from a few long ones. The variants take turns at running first in a round, and each round
// starts new processes of them (warmed 6 s): one process of a build can run a tenth above or below another
// for its whole life, so a comparison of one process each measures the pair, not the builds.
// TRACECOST_ROUNDS (default 4), TRACECOST_DURATION_S (default 8), TRACECOST_FRESH=0 (one process per variant
// for every round); TRACECOST_PROFILE=<dir>: the gateways run under --cpu-prof (a profile per process written
// there on exit; the figures are then the profiler's too). TRACECOST_NAME=<name> also writes every round's figures
// to bench/results/<date>-<name>.json. `npm run bench -- peers` runs it on the gateway, the floor and the peers.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseVariants, startBench, wrk, type RunningVariant } from './gateway-variants.ts';
import { runNameProblem, runOrigin, writeRunResults } from './results-file.ts';

const ROUNDS = Number(process.env.TRACECOST_ROUNDS ?? 4);
const DURATION_S = Number(process.env.TRACECOST_DURATION_S ?? 8);
const PROFILE_DIR = process.env.TRACECOST_PROFILE || undefined;
const FRESH = process.env.TRACECOST_FRESH !== '0';
/** Seconds of load before a process is measured: its hot code optimised, its pools and caches filled. */
const WARM_S = Number(process.env.TRACECOST_WARM_S ?? 6);
const NAME = process.env.TRACECOST_NAME || undefined;
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STARTED = new Date();
/** What is measured is the build at the start: its commit, not the one at the end. */
const ORIGIN = runOrigin(ROOT, STARTED);
if (NAME !== undefined && runNameProblem(NAME) !== undefined) {
  process.stderr.write(`TRACECOST_NAME ${NAME}: ${runNameProblem(NAME)}\n`);
  process.exit(2);
}

const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU seconds per thread name (the main thread is the process's own name), from /proc/<pid>/task. */
function threadSeconds(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      const name = task === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+$/, '');
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICKS);
    } catch {
      // the thread ended
    }
  }
  return byName;
}

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

const variants = parseVariants(process.argv.slice(2));
const bench = await startBench();

try {
  /** One process of a variant, started and warmed; `generation` names its log and profile apart from earlier ones. */
  const launch = (variant: (typeof variants)[number], index: number, generation: number): Promise<RunningVariant> => {
    const name = `gateway-${index}-${generation}`;
    const nodeFlags = PROFILE_DIR !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${name}.cpuprofile`] : [];
    return bench.launch(variant, { name, cpu: '0', nodeFlags, warmS: WARM_S });
  };
  const stop = (children: ChildProcess[]) => bench.stop(children);
  const gateways = variants.map((variant) => ({
    ...variant,
    runs: [] as number[],
    /** Requests a second of each run. */
    rates: [] as number[],
    /** The share of its core each run used: under 1, the load generator (not the gateway) set the pace. */
    coreShares: [] as number[],
    threads: new Map<string, number>(),
    requests: 0,
  }));
  let running = FRESH ? [] : await Promise.all(variants.map((variant, index) => launch(variant, index, 0)));
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts with the next variant in turn, so that no variant always runs first. Two processes of
    // one build differ by up to a tenth for as long as they run (what each one's JIT made of the code), so by
    // default every round starts new processes: the median of many rounds' ratios is then one of many pairs
    // of processes, not of one pair (TRACECOST_FRESH=0 keeps one process per variant for every round).
    if (FRESH) {
      running = [];
      for (const [index, variant] of variants.entries()) running.push(await launch(variant, index, round));
    }
    const inTurn = [...gateways.keys()].map((at) => (at + round) % gateways.length);
    for (const at of inTurn) {
      const gateway = gateways[at]!;
      const { child, url } = running[at]!;
      const before = cpuSeconds(child.pid!);
      const threadsBefore = threadSeconds(child.pid!);
      const requests = await wrk(url, bench.keyFor(variants[at]!), DURATION_S);
      const used = cpuSeconds(child.pid!) - before;
      gateway.runs.push((used * 1e6) / requests);
      gateway.rates.push(requests / DURATION_S);
      gateway.coreShares.push(used / DURATION_S);
      for (const [name, seconds] of threadSeconds(child.pid!))
        gateway.threads.set(name, (gateway.threads.get(name) ?? 0) + seconds - (threadsBefore.get(name) ?? 0));
      gateway.requests += requests;
    }
    if (FRESH) await stop(running.map(({ child }) => child));
    process.stdout.write(`round ${round + 1}: ${gateways.map((gateway) => `${gateway.spec} ${gateway.runs.at(-1)!.toFixed(1)}`).join(', ')} CPU µs/req\n`);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const base = median(gateways[0]!.runs);
  // Each round's own ratio to the first variant, then their median: the machine's drift between rounds
  // (other tenants, CPU steal) moves both sides of a round's ratio alike, so many short rounds resolve
  // what a ratio of medians over a few long ones cannot.
  const firstRuns: number[] = gateways[0]!.runs;
  const ratios = (runs: number[]) => runs.map((run, round) => run / firstRuns[round]!).sort((a, b) => a - b);
  const paired = (runs: number[]) => median(ratios(runs));
  /** The middle half of the rounds' ratios: how far one round's pair of processes can be trusted. */
  const middleHalf = (runs: number[]) => {
    const sorted = ratios(runs);
    return `${sorted[Math.floor((sorted.length - 1) / 4)]!.toFixed(2)}-${sorted[Math.ceil(((sorted.length - 1) * 3) / 4)]!.toFixed(2)}`;
  };
  for (const gateway of gateways)
    process.stdout.write(
      `${gateway.spec.padEnd(32)} median ${median(gateway.runs).toFixed(1)} µs/req, ×${(median(gateway.runs) / base).toFixed(2)}; median of rounds' ratios ×${paired(gateway.runs).toFixed(2)} (middle half ${middleHalf(gateway.runs)}); ${median(gateway.coreShares).toFixed(2)} of its core\n`,
    );
  for (const gateway of gateways)
    process.stdout.write(
      `${gateway.spec.padEnd(32)} by thread, µs/req: ${[...gateway.threads]
        .filter(([, seconds]) => seconds > 0)
        .map(([name, seconds]) => `${name} ${((seconds * 1e6) / gateway.requests).toFixed(1)}`)
        .join(', ')}\n`,
    );
  if (NAME !== undefined) {
    const record = {
      origin: ORIGIN,
      settings: { rounds: ROUNDS, durationS: DURATION_S, warmS: WARM_S, fresh: FRESH, variants: variants.map((variant) => variant.spec) },
      variants: gateways.map((gateway) => ({
        spec: gateway.spec,
        cpuMicrosPerRequest: { median: median(gateway.runs), rounds: gateway.runs },
        requestsPerSecond: { median: median(gateway.rates), rounds: gateway.rates },
        ratioToFirst: { medianOfRounds: paired(gateway.runs), middleHalf: middleHalf(gateway.runs), rounds: ratios(gateway.runs) },
      })),
    };
    process.stdout.write(`results: ${writeRunResults(join(ROOT, 'bench/results'), NAME, STARTED, record)}\n`);
  }
  const stats = (await (await fetch(`http://127.0.0.1:${bench.sinkPort}/stats`)).json()) as { spans: number; exports: number };
  process.stdout.write(`sink so far: ${stats.spans} spans in ${stats.exports} exports\n`);
  if (!FRESH) await stop(running.map(({ child }) => child));
} finally {
  bench.close();
}
