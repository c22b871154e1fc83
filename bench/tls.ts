// npm run bench -- tls: what TLS on both legs costs a request. Four targets in one run: the Node floor and the gateway
// (every feature on, tracing off), each plain and each behind TLS on both legs (an HTTPS listener, mutual TLS to a
// backend that demands a client certificate; certificates made for the run by bench/certificates.ts). CPU per
// request from alternated rounds of new processes (bench/gateway-variants.ts, as bench/tracecost.ts), then
// instructions per request under callgrind (bench/instruction-count.ts); each ratio as the median of the rounds' own
// ratios with their middle half and range. Keep-alive connections throughout (wrk's), so a handshake is amortised over
// every request of a connection: the requests per connection on each leg are counted and reported.
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Bench, FailedAnswers, parseVariants, type RunningVariant, startBench, wrk } from './gateway-variants.ts';
import { countInstructions, valgrindProblem, type VariantCount } from './instruction-count.ts';
import { runOrigin, writeRunResults } from './results-file.ts';

export const TLS_USAGE = `npm run bench -- tls: the Node floor and the gateway (tracing off), each plain and behind TLS on both legs
(HTTPS listener, mutual TLS to the backend), in alternated rounds of new processes: CPU per request, then
instructions per request under callgrind. Ratios are the median of the rounds' own ratios, with their middle
half and range. Written to DIR/<date>-<NAME>.json (NAME: the short commit and -tls, or --name).

environment:
  BENCH_TLS_ROUNDS           rounds of CPU time, each with new processes of the four (8)
  BENCH_TLS_DURATION_S       seconds of each measured run (4)
  BENCH_TLS_WARM_S           seconds of load on a new process before it is measured (6)
  BENCH_CONNECTIONS          wrk's connections (50)
  BENCH_TLS_INSTRUCTIONS     0: no callgrind phase (it takes about 15 minutes)
  INSTRUCTIONS_FLOOR_WARM_S  callgrind warm-up of the two floors, seconds (150)
  INSTRUCTIONS_WARM_S        callgrind warm-up of the two gateways, seconds (600)
  INSTRUCTIONS_DURATION_S    seconds of each counted round (20)
  INSTRUCTIONS_ROUNDS        counted rounds (3)
`;

const ROUNDS = Math.max(1, Number(process.env.BENCH_TLS_ROUNDS ?? 8));
const DURATION_S = Math.max(1, Number(process.env.BENCH_TLS_DURATION_S ?? 4));
const WARM_S = Math.max(1, Number(process.env.BENCH_TLS_WARM_S ?? 6));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const INSTRUCTIONS = process.env.BENCH_TLS_INSTRUCTIONS !== '0';
/**
 * Under callgrind the gateway serves a few dozen requests a second on a core of its own, and its hot code is
 * compiled after some 600 s (300 s left V8's compiler in every round of 2026-11-26's runs); the floor, with far
 * less code, after 150 s.
 */
const INSTRUCTIONS_FLOOR_WARM_S = Number(process.env.INSTRUCTIONS_FLOOR_WARM_S ?? 150);
const INSTRUCTIONS_WARM_S = Number(process.env.INSTRUCTIONS_WARM_S ?? 600);
const INSTRUCTIONS_DURATION_S = Number(process.env.INSTRUCTIONS_DURATION_S ?? 20);
const INSTRUCTIONS_ROUNDS = Number(process.env.INSTRUCTIONS_ROUNDS ?? 3);
/** wrk's connections under callgrind, as bench/instructions.ts: a request there takes tens of milliseconds. */
const CALLGRIND_CONNECTIONS = 8;

/** The four targets, in the order rounds rotate through; the names the report and the results file use. */
const TARGETS = [
  { name: 'plain floor', spec: 'floor' },
  { name: 'TLS floor', spec: 'floor,BENCH_TLS=1' },
  { name: 'plain gateway', spec: 'off' },
  { name: 'TLS gateway', spec: 'off,BENCH_TLS=1' },
] as const;
const [PLAIN_FLOOR, TLS_FLOOR, PLAIN_GATEWAY, TLS_GATEWAY] = [0, 1, 2, 3] as const;
/** What is compared: [name, numerator, denominator]. */
const PAIRS: ReadonlyArray<readonly [string, number, number]> = [
  ['TLS gateway / plain gateway', TLS_GATEWAY, PLAIN_GATEWAY],
  ['TLS floor / plain floor', TLS_FLOOR, PLAIN_FLOOR],
  ['TLS gateway / TLS floor', TLS_GATEWAY, TLS_FLOOR],
  ['plain gateway / plain floor', PLAIN_GATEWAY, PLAIN_FLOOR],
];

const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

/** The connections a backend's stats count, every protocol and cipher together. */
const sum = (record: Record<string, number>) => Object.values(record).reduce((total, count) => total + count, 0);
const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A ratio's spread over rounds: each round's own ratio (the machine's drift moves both sides of a round alike). */
export interface Spread {
  median: number;
  /** The middle half of the rounds' ratios. */
  middleHalf: [number, number];
  range: [number, number];
  rounds: number[];
}
function spread(ratios: readonly number[]): Spread {
  const sorted = [...ratios].sort((a, b) => a - b);
  return {
    median: median(sorted),
    middleHalf: [sorted[Math.floor((sorted.length - 1) / 4)]!, sorted[Math.ceil(((sorted.length - 1) * 3) / 4)]!],
    range: [sorted[0]!, sorted.at(-1)!],
    rounds: [...ratios],
  };
}
const showSpread = (value: Spread, digits = 2) =>
  `${value.median.toFixed(digits)} (middle half ${value.middleHalf.map((end) => end.toFixed(digits)).join('-')}, range ${value.range.map((end) => end.toFixed(digits)).join('-')})`;

/** The protocol and cipher a TLS listener agrees with OpenSSL's client defaults (wrk's), from `openssl s_client -brief`. */
function negotiated(url: string): Promise<string> {
  const { host } = new URL(url);
  return new Promise((resolve) => {
    const child = execFile('openssl', ['s_client', '-connect', host, '-brief'], { timeout: 10_000 }, (_error, stdout, stderr) => {
      const text = `${stdout}\n${stderr}`;
      const protocol = /Protocol version: (\S+)/.exec(text)?.[1];
      const cipher = /Ciphersuite: (\S+)/.exec(text)?.[1];
      resolve(protocol === undefined ? 'unknown' : `${protocol} ${cipher ?? ''}`.trim());
    });
    child.stdin?.end();
  });
}

interface CpuRound {
  cpuUsPerRequest: number;
  backendCpuUsPerRequest: number;
  rps: number;
  requests: number;
}

/**
 * A round in which any target answered an error (non-2xx, in its warm-up or its run) is discarded and run again, at
 * most ROUNDS times in all: on a machine other work loads, the gateway's Redis commands can time out (503), and a
 * round with failures measured another path. Each discarded round is told and recorded.
 */
async function cpuPhase(bench: Bench, write: (text: string) => void) {
  const variants = parseVariants(TARGETS.map((target) => target.spec));
  const runs: CpuRound[][] = TARGETS.map(() => []);
  const listenerProtocols = new Map<string, string>();
  const discarded: string[] = [];
  for (let round = 0, attempt = 0; round < ROUNDS; attempt++) {
    // New processes every round: two processes of one build run up to a tenth apart for their whole lives.
    const running: RunningVariant[] = [];
    const measured: CpuRound[] = [];
    try {
      for (const [index, variant] of variants.entries())
        running.push(await bench.launch(variant, { name: `tls-bench-${index}-${attempt}`, cpu: '0', warmS: WARM_S, connections: CONNECTIONS }));
      if (listenerProtocols.size === 0)
        for (const index of [TLS_FLOOR, TLS_GATEWAY]) listenerProtocols.set(TARGETS[index].name, await negotiated(running[index]!.url));
      // Each round starts with the next target in turn, so that none always runs first.
      for (const at of TARGETS.map((_, index) => (index + round) % TARGETS.length)) {
        const { child, url, backendPid } = running[at]!;
        const before = cpuSeconds(child.pid!);
        const backendBefore = cpuSeconds(backendPid);
        const started = performance.now();
        const requests = await wrk(url, bench.key, DURATION_S, CONNECTIONS);
        const seconds = (performance.now() - started) / 1000;
        measured[at] = {
          cpuUsPerRequest: ((cpuSeconds(child.pid!) - before) * 1e6) / requests,
          backendCpuUsPerRequest: ((cpuSeconds(backendPid) - backendBefore) * 1e6) / requests,
          // wrk's own duration is not returned: the elapsed time of its run, a little above DURATION_S (its start-up).
          rps: requests / Math.max(DURATION_S, seconds),
          requests,
        };
      }
    } catch (error) {
      if (!(error instanceof FailedAnswers) || discarded.length >= ROUNDS) throw error;
      discarded.push(`attempt ${attempt + 1}: ${error.message}`);
      write(`round ${round + 1} discarded (${error.message}); run again\n`);
      continue;
    } finally {
      await bench.stop(running.map(({ child }) => child));
    }
    for (const [index, result] of measured.entries()) runs[index]!.push(result);
    round++;
    write(`round ${round}: ${TARGETS.map((target, index) => `${target.name} ${runs[index]!.at(-1)!.cpuUsPerRequest.toFixed(1)}`).join(', ')} CPU µs/req\n`);
  }
  return { runs, listenerProtocols, discarded };
}

/**
 * The rounds in which neither of two variants answered an error (under load from a loaded machine the gateway's
 * Redis commands can time out); every round when each had one, which the report then says.
 */
function cleanRounds(counts: readonly VariantCount[], a: number, b: number): number[] {
  const all = counts[a]!.steady.map((_, round) => round);
  const clean = all.filter((round) => counts[a]!.failed[round] === 0 && counts[b]!.failed[round] === 0);
  return clean.length > 0 ? clean : all;
}

/** Of `rounds`, the one where the two compared variants compiled least (the larger of their compiler shares smallest). */
function quietestRound(counts: readonly VariantCount[], a: number, b: number, rounds: readonly number[]): number {
  const share = (index: number, round: number) => counts[index]!.compiler[round]! / counts[index]!.steady[round]!;
  return rounds.reduce((best, round) => (Math.max(share(a, round), share(b, round)) < Math.max(share(a, best), share(b, best)) ? round : best));
}

/** Runs the TLS bench; returns the exit code. */
export async function runTlsBench({ root, runName, resultsDir }: { root: string; runName: string; resultsDir: string }): Promise<number> {
  const write = (text: string) => process.stdout.write(text);
  const started = new Date();
  const origin = runOrigin(root, started);
  const problem = INSTRUCTIONS ? valgrindProblem() : undefined;
  if (problem !== undefined) {
    process.stderr.write(`bench tls: the callgrind phase needs ${problem}; BENCH_TLS_INSTRUCTIONS=0 leaves it out\n`);
    return 2;
  }
  // The variants' bench stops its processes on exit; a SIGTERM (npm's, a CI's) exits through it.
  process.on('SIGTERM', () => process.exit(143));
  const bench = await startBench();
  try {
    write(
      `TLS on both legs: ${TARGETS.map((target) => target.name).join(', ')}; servers on CPU 0, wrk (1 thread, ${CONNECTIONS} keep-alive connections) on CPU 1\n` +
        `CPU time: ${ROUNDS} rounds of new processes (warmed ${WARM_S} s), ${DURATION_S} s a target a round, in turn\n\n`,
    );
    const backendBefore = (await bench.tlsBackendStats()) ?? { requests: 0, connections: {} };
    const { runs, listenerProtocols, discarded } = await cpuPhase(bench, write);
    const backendAfter = (await bench.tlsBackendStats()) ?? { requests: 0, connections: {} };
    // Every upstream request and connection of the TLS targets during the phase, the warm-ups' included.
    const upstreamRequests = backendAfter.requests - backendBefore.requests;
    const upstreamConnections = sum(backendAfter.connections) - sum(backendBefore.connections);
    const measuredRuns = runs[TLS_FLOOR]!.length + runs[TLS_GATEWAY]!.length;
    const listenerRequestsPerConnection = median([...runs[TLS_FLOOR]!, ...runs[TLS_GATEWAY]!].map((run) => run.requests / CONNECTIONS));

    const cpu = TARGETS.map((target, index) => ({
      name: target.name,
      spec: target.spec,
      cpuUsPerRequest: median(runs[index]!.map((run) => run.cpuUsPerRequest)),
      backendCpuUsPerRequest: median(runs[index]!.map((run) => run.backendCpuUsPerRequest)),
      rps: median(runs[index]!.map((run) => run.rps)),
      rounds: runs[index]!,
    }));
    const cpuRatios = Object.fromEntries(
      PAIRS.map(([name, a, b]) => [name, spread(runs[a]!.map((run, round) => run.cpuUsPerRequest / runs[b]![round]!.cpuUsPerRequest))]),
    );
    const addedUs = {
      gateway: spread(runs[TLS_GATEWAY]!.map((run, round) => run.cpuUsPerRequest - runs[PLAIN_GATEWAY]![round]!.cpuUsPerRequest)),
      floor: spread(runs[TLS_FLOOR]!.map((run, round) => run.cpuUsPerRequest - runs[PLAIN_FLOOR]![round]!.cpuUsPerRequest)),
    };
    write(`\n${'target'.padEnd(16)} CPU µs/req  req/s   backend CPU µs/req (medians)\n`);
    for (const target of cpu)
      write(
        `${target.name.padEnd(16)} ${target.cpuUsPerRequest.toFixed(1).padStart(10)} ${target.rps.toFixed(0).padStart(6)} ${target.backendCpuUsPerRequest.toFixed(1).padStart(10)}\n`,
      );
    write("\nCPU per request, the median of the rounds' own ratios:\n");
    for (const [name] of PAIRS) write(`  ${name.padEnd(30)} ${showSpread(cpuRatios[name]!)}\n`);
    write(
      `  TLS added, CPU µs/req: gateway +${showSpread(addedUs.gateway, 1)}; floor +${showSpread(addedUs.floor, 1)}\n` +
        `listener: ${[...listenerProtocols].map(([name, agreed]) => `${name} ${agreed}`).join(', ')}; ${listenerRequestsPerConnection.toFixed(0)} requests a connection in a measured run (wrk's ${CONNECTIONS}, kept)\n` +
        `upstream (mTLS): ${Object.entries(backendAfter.connections)
          .map(([agreed, count]) => `${agreed} ×${count}`)
          .join(
            ', ',
          )}; ${upstreamRequests} requests over ${upstreamConnections} connections, ${(upstreamRequests / Math.max(1, upstreamConnections)).toFixed(0)} a connection (${measuredRuns} measured runs and their warm-ups)\n`,
    );

    let instructions: Record<string, unknown> | undefined;
    if (INSTRUCTIONS) {
      write(
        `\nInstructions under callgrind, in two pairs (plain and TLS floor, warmed ${INSTRUCTIONS_FLOOR_WARM_S} s; plain and TLS gateway, warmed ${INSTRUCTIONS_WARM_S} s), ` +
          `each process on a core of its own, ${CALLGRIND_CONNECTIONS} keep-alive connections each; ${INSTRUCTIONS_ROUNDS} rounds of ${INSTRUCTIONS_DURATION_S} s\n`,
      );
      const variants = parseVariants(TARGETS.map((target) => target.spec));
      // The upstream connections opened and requests sent while rounds were counted: a connection opened then is a
      // handshake the counts include.
      let countedUpstreamRequests = 0;
      let countedUpstreamConnections = 0;
      let countedBefore = { requests: 0, connections: {} as Record<string, number> };
      const aroundRounds = {
        before: async () => {
          countedBefore = (await bench.tlsBackendStats()) ?? countedBefore;
        },
        after: async () => {
          const after = (await bench.tlsBackendStats()) ?? countedBefore;
          countedUpstreamRequests += after.requests - countedBefore.requests;
          countedUpstreamConnections += sum(after.connections) - sum(countedBefore.connections);
        },
      };
      // Two at a time, a core each: four at once on two cores left the gateways compiling in every round.
      const pair = (indexes: readonly number[], name: string, warmS: number) =>
        countInstructions(
          bench,
          indexes.map((index) => variants[index]!),
          {
            warmS,
            durationS: INSTRUCTIONS_DURATION_S,
            rounds: INSTRUCTIONS_ROUNDS,
            outDir: join(bench.workDir, name),
            name,
            connections: CALLGRIND_CONNECTIONS,
            load: 'keep-alive',
            settleS: 15,
            aroundRounds,
            progress: (line) => write(`${line}\n`),
          },
        );
      const [plainFloor, tlsFloor] = await pair([PLAIN_FLOOR, TLS_FLOOR], 'callgrind-floors', INSTRUCTIONS_FLOOR_WARM_S);
      const [plainGateway, tlsGateway] = await pair([PLAIN_GATEWAY, TLS_GATEWAY], 'callgrind-gateways', INSTRUCTIONS_WARM_S);
      const counts = [plainFloor!, tlsFloor!, plainGateway!, tlsGateway!];
      write(
        `keep-alive under callgrind: ${CALLGRIND_CONNECTIONS} connections a target, made before the first round; while rounds were counted the mTLS backend ` +
          `served ${countedUpstreamRequests} requests and accepted ${countedUpstreamConnections} new connections\n`,
      );
      const k = (value: number) => `${(value / 1000).toFixed(1)}k`;
      for (const [index, target] of TARGETS.entries()) {
        const count = counts[index]!;
        write(
          `${target.name.padEnd(16)} ${k(median(count.steady))} instructions/req (rounds ${count.steady.map(k).join(' ')}); apart: compiler ${count.compiler.map(k).join(' ')}, gc ${count.gc.map(k).join(' ')}` +
            `${count.failed.some((failed) => failed > 0) ? `; failed answers by round ${count.failed.join(' ')}` : ''}\n`,
        );
      }
      const ratios = Object.fromEntries(
        PAIRS.map(([name, a, b]) => {
          const rounds = cleanRounds(counts, a, b);
          const quiet = quietestRound(counts, a, b, rounds);
          return [
            name,
            {
              ...spread(rounds.map((round) => counts[a]!.steady[round]! / counts[b]!.steady[round]!)),
              roundsCompared: rounds.map((round) => round + 1),
              quietestRound: quiet + 1,
              quietest: counts[a]!.steady[quiet]! / counts[b]!.steady[quiet]!,
              compilerShares: [counts[a]!.compiler[quiet]! / counts[a]!.steady[quiet]!, counts[b]!.compiler[quiet]! / counts[b]!.steady[quiet]!],
            },
          ];
        }),
      );
      write("instructions per request, the median of the rounds' own ratios; the round where both compiled least:\n");
      for (const [name] of PAIRS) {
        const ratio = ratios[name] as Spread & { roundsCompared: number[]; quietestRound: number; quietest: number; compilerShares: number[] };
        const some = ratio.roundsCompared.length < INSTRUCTIONS_ROUNDS ? ` (rounds ${ratio.roundsCompared.join(', ')}: the others had failed answers)` : '';
        write(
          `  ${name.padEnd(30)} ${showSpread(ratio, 3)}${some}; round ${ratio.quietestRound}: ${ratio.quietest.toFixed(3)} (compiler ${ratio.compilerShares.map((share) => `${(share * 100).toFixed(1)}%`).join(' and ')} of the steady count)\n`,
        );
      }
      instructions = {
        floorWarmS: INSTRUCTIONS_FLOOR_WARM_S,
        gatewayWarmS: INSTRUCTIONS_WARM_S,
        durationS: INSTRUCTIONS_DURATION_S,
        pairs: 'the floors, then the gateways: ratios across pairs pair the rounds by their number',
        connections: CALLGRIND_CONNECTIONS,
        load: 'keep-alive connections made before the first round, kept to the last',
        upstreamDuringRounds: { requests: countedUpstreamRequests, newConnections: countedUpstreamConnections },
        targets: TARGETS.map((target, index) => ({
          name: target.name,
          steadyPerRequest: counts[index]!.steady,
          failedAnswers: counts[index]!.failed,
          compilerPerRequest: counts[index]!.compiler,
          gcPerRequest: counts[index]!.gc,
          byPartPerRequest: Object.fromEntries([...counts[index]!.parts].map(([part, count]) => [part, count / counts[index]!.requests])),
        })),
        ratios,
      };
    }

    const file = writeRunResults(resultsDir, runName, started, {
      ...origin,
      bench: 'tls',
      request: `GET ${process.env.BENCH_TARGET ?? '/v1/pets?limit=20&status=available'}`,
      settings: { rounds: ROUNDS, durationS: DURATION_S, warmS: WARM_S, connections: CONNECTIONS, serverCpu: '0', loadCpu: '1', keys: 'P-256 (ECDSA)' },
      tls: {
        listener: Object.fromEntries(listenerProtocols),
        upstream: backendAfter.connections,
        listenerRequestsPerConnection,
        upstreamRequests,
        upstreamConnections,
      },
      // `cpu` is the origin's CPU model.
      cpuTime: { targets: cpu, ratios: cpuRatios, addedUsPerRequest: addedUs, discardedRounds: discarded },
      ...(instructions === undefined ? {} : { instructions }),
    });
    write(`\nresults: ${file}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`bench tls: ${error instanceof Error ? error.message : String(error)}\nlogs in ${bench.workDir}\n`);
    // The logs are what tells why: kept.
    process.exit(1);
  } finally {
    bench.close();
  }
}
