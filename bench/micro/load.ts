// Shared by the micro benches that go over the network: servers pinned to one core, wrk to the other,
// variants in turn for several rounds (saturating, then paced), medians of throughput and of each
// server's own CPU per request.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { START_ARGS } from '../../support/start-gateway-process.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** On two cores: servers on core 0, the load generator on core 1 (as bench/run.ts). */
export const SERVER_CPU = process.env.MICRO_SERVER_CPU ?? '0';
export const LOAD_CPU = process.env.MICRO_LOAD_CPU ?? '1';
export const ROUNDS = Math.max(3, Number(process.env.MICRO_ROUNDS ?? 5));
export const DURATION_S = Math.max(1, Number(process.env.MICRO_DURATION_S ?? 8));
export const CONNECTIONS = Number(process.env.MICRO_CONNECTIONS ?? 50);
/**
 * The paced runs' rate (req/s): every variant serves the same load, so their CPU per request compares
 * alike. At saturation a faster server also batches more requests per event-loop turn, which lowers
 * its CPU per request on top of doing less per request.
 */
export const RATE = Number(process.env.MICRO_RATE ?? 3000);
const PACED_CONNECTIONS = Math.max(10, Math.ceil(RATE / 100));
const WARM_UP_S = 3;
/** npm start's V8 flags (not its entry point): every server runs under the flags production uses. */
export const NODE_FLAGS = START_ARGS.filter((arg) => arg.startsWith('--'));

const children = new Set<ChildProcess>();
function killAll(): void {
  for (const child of children) child.kill('SIGKILL');
}
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

function pinned(cpu: string, command: string, args: string[]): [string, string[]] {
  return process.platform === 'linux' && cpu !== '' ? ['taskset', ['-c', cpu, command, ...args]] : [command, args];
}

export interface Server {
  port: number;
  pid: number;
}

/** Starts `node <NODE_FLAGS> <args>` on the servers' core; it prints `{"port":N}` once it listens. */
export async function startServer(args: string[]): Promise<Server> {
  const [command, argv] = pinned(SERVER_CPU, process.execPath, [...NODE_FLAGS, ...args]);
  const child = spawn(command, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && child.exitCode === null) {
    const line = output.split('\n').find((entry) => entry.startsWith('{"port"'));
    // taskset execs the server: the child's pid is the server's own.
    if (line !== undefined) return { port: (JSON.parse(line) as { port: number }).port, pid: child.pid! };
    await sleep(20);
  }
  throw new Error(`server ${args.join(' ')} did not start:\n${output}`);
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
/** CPU seconds (user + system) the process has used, from its own accounting in /proc. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

interface WrkReport {
  requests: number;
  durationUs: number;
  skipped?: number;
  non2xx: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
}

function wrk(url: string, durationS: number, paced: boolean): Promise<WrkReport> {
  const load = paced
    ? [`-c${PACED_CONNECTIONS}`, '-s', join(ROOT, 'bench/wrk/paced.lua'), url, '--', String(RATE), String(PACED_CONNECTIONS)]
    : [`-c${CONNECTIONS}`, '-s', join(ROOT, 'bench/wrk/throughput.lua'), url];
  const [command, argv] = pinned(LOAD_CPU, 'wrk', ['-t1', `-d${durationS}s`, '--timeout', '10s', ...load]);
  return new Promise((resolve, reject) => {
    execFile(command, argv, (error, stdout, stderr) => {
      if (error) return reject(new Error(`wrk failed: ${stderr || stdout}`));
      const line = stdout.split('\n').findLast((candidate) => candidate.startsWith('{'));
      if (line === undefined) return reject(new Error(`wrk printed no report:\n${stdout}`));
      resolve(JSON.parse(line) as WrkReport);
    });
  });
}

export interface Target {
  name: string;
  url: string;
  /** The process whose CPU is the target's own. */
  pid: number;
}

export interface Result {
  rps: number;
  cpuUsPerRequest: number;
  failed: number;
}

async function measure(target: Target, paced: boolean): Promise<Result> {
  const before = cpuSeconds(target.pid);
  const report = await wrk(target.url, DURATION_S, paced);
  const cpu = cpuSeconds(target.pid) - before;
  return {
    rps: report.requests / (report.durationUs / 1e6),
    cpuUsPerRequest: (cpu * 1e6) / report.requests,
    failed: report.non2xx + report.connect + report.read + report.write + report.timeout,
  };
}

export interface Runs {
  saturating: Result[][];
  paced: Result[][];
}

export const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * Checks every target answers 200, then two phases as bench/run.ts runs them, each with its own warm-up:
 * saturating runs, then runs paced at RATE; in each, the targets take turns for ROUNDS rounds.
 */
export async function rounds(targets: Target[]): Promise<Runs> {
  for (const target of targets) {
    const response = await fetch(target.url);
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`${target.name} answered ${response.status}`);
  }
  const runs: Runs = { saturating: targets.map(() => []), paced: targets.map(() => []) };
  for (const paced of [false, true]) {
    const phase = paced ? runs.paced : runs.saturating;
    for (const target of targets) await wrk(target.url, WARM_UP_S, paced);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, target] of targets.entries()) phase[index]!.push(await measure(target, paced));
      const summary = targets.map((target, index) => `${target.name} ${phase[index]!.at(-1)!.rps.toFixed(0)}`).join(', ');
      process.stderr.write(`${paced ? 'paced' : 'saturating'} round ${round + 1}/${ROUNDS}: ${summary} req/s\n`);
    }
  }
  return runs;
}

/** One row per target: medians, each with its ratio to the first target's. */
export function table(targets: Target[], runs: Runs): string {
  const medians = (results: Result[]) => ({
    rps: median(results.map((result) => result.rps)),
    cpu: median(results.map((result) => result.cpuUsPerRequest)),
    failed: results.reduce((sum, result) => sum + result.failed, 0),
  });
  const saturating = runs.saturating.map(medians);
  const paced = runs.paced.map(medians);
  const width = Math.max(...targets.map((target) => target.name.length));
  const ratio = (value: number, base: number) => `×${(value / base).toFixed(2)}`.padStart(6);
  const lines = [
    `${''.padEnd(width)}   saturating (${CONNECTIONS} connections)          paced at ${RATE} req/s`,
    `${'variant'.padEnd(width)}      req/s         CPU µs/req          req/s  CPU µs/req        failed`,
    ...targets.map((target, index) => {
      const s = saturating[index]!;
      const p = paced[index]!;
      return [
        target.name.padEnd(width),
        s.rps.toFixed(0).padStart(10),
        ratio(s.rps, saturating[0]!.rps),
        s.cpu.toFixed(1).padStart(8),
        ratio(s.cpu, saturating[0]!.cpu),
        p.rps.toFixed(0).padStart(8),
        p.cpu.toFixed(1).padStart(8),
        ratio(p.cpu, paced[0]!.cpu),
        String(s.failed + p.failed).padStart(7),
      ].join(' ');
    }),
  ];
  const offPace = paced.filter((result) => Math.abs(result.rps - RATE) > RATE * 0.02).length;
  if (offPace > 0) lines.push(`${offPace} target(s) off pace by more than 2%: their paced CPU is at another rate`);
  return `${lines.join('\n')}\n`;
}

export function header(what: string): string {
  return (
    `${what}\nservers on CPU ${SERVER_CPU} (node ${process.version} ${NODE_FLAGS.join(' ')}), wrk -t1 on CPU ${LOAD_CPU}; ` +
    `${ROUNDS} rounds of ${DURATION_S} s per phase, variants in turn, medians; CPU from each server's /proc/<pid>/stat\n`
  );
}
