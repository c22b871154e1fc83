// Counting instructions per request under valgrind's callgrind, for bench/instructions.ts and the TLS bench
// (npm run bench -- tls): every variant runs at once under callgrind, each on a CPU in turn, warmed, then counted
// in rounds of load; each round's count is split by part so that V8's compiler and GC can be set apart.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { type Bench, type Variant, wrk } from './gateway-variants.ts';

/** Where an instruction was executed, by the function callgrind names (V8's JIT code has no name: `???`). */
const PARTS: ReadonlyArray<readonly [string, RegExp]> = [
  ['compiler', /compiler::|maglev|turboshaft|Turboshaft|Maglev/],
  ['gc', /Scaveng|MarkCompact|Heap::|heap::|Sweeper|Marking|Evacuat|MemoryAllocator|RememberedSet|SlotSet|MinorMark|PagedSpace|NewSpace|GCTracer|cppgc/],
  ['builtins', /Builtins_/],
  ['jit', /\[\?\?\?\]$/],
  ['libc', /libc\.so/],
  ['v8 runtime', /v8::/],
];

export type Parts = Map<string, number>;

/** Instructions by part, from callgrind_annotate's flat listing of one dump. */
function partsOf(file: string): Parts {
  const listing = execFileSync('callgrind_annotate', ['--threshold=100', '--inclusive=no', file], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const parts: Parts = new Map();
  for (const line of listing.split('\n')) {
    const match = /^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$/.exec(line);
    if (match === null || match[2]!.includes('PROGRAM TOTALS')) continue;
    const count = Number(match[1]!.replaceAll(',', ''));
    const part = PARTS.find(([, pattern]) => pattern.test(match[2]!))?.[0] ?? 'other';
    parts.set(part, (parts.get(part) ?? 0) + count);
  }
  return parts;
}

/** Whether valgrind can be run; the message says how to get it when it cannot. */
export function valgrindProblem(): string | undefined {
  try {
    execFileSync('valgrind', ['--version']);
    return undefined;
  } catch {
    return 'valgrind is not installed (Debian: apt-get install valgrind)';
  }
}

export interface CountOptions {
  warmS: number;
  durationS: number;
  rounds: number;
  /** Where the callgrind files go. */
  outDir: string;
  /** Names the processes' logs apart from another count's in the same bench (default `callgrind`). */
  name?: string;
  /** wrk's connections (8: under callgrind a request takes tens of milliseconds). */
  connections?: number;
  /** Printed after each round. */
  progress?: (line: string) => void;
  /**
   * `wrk` (the default): each round is a `wrk` run of its own, on new connections. `keep-alive`: one load, from
   * this process, on connections kept from before the first round to after the last, each round a window of it;
   * so that over TLS a round counts requests, not the handshakes of its new connections (under callgrind a
   * connection carries a few hundred requests at most, and one handshake weighs as much as dozens of them).
   */
  load?: 'wrk' | 'keep-alive';
  /** Seconds of the keep-alive load before the first round, after the warm-up: its connections made. */
  settleS?: number;
  /**
   * Seconds of load after a `BENCH_RELOAD_AFTER_WARM` reload before the first round (default 150): a reload builds a new
   * pipeline generation (its closures, pools and stores) and leaves the one before to be collected; under callgrind both take
   * that long to settle (a document whose text changed is compiled anew and its validators optimised again, longer still).
   */
  reloadSettleS?: number;
  /** Called before the first counted round and after the last (e.g. to read what the backend saw in between). */
  aroundRounds?: { before(): Promise<void>; after(): Promise<void> };
}

/** Load kept up on `connections` keep-alive connections until stopped; counts the answers. */
function keepAliveLoad(url: string, authorization: string, connections: number, ca: Buffer | undefined) {
  const target = new URL(url);
  const pool = new Pool(target.origin, {
    connections,
    // Under callgrind an answer can take seconds.
    headersTimeout: 120_000,
    bodyTimeout: 120_000,
    ...(ca === undefined ? {} : { connect: { ca } }),
  });
  let answered = 0;
  const failures: string[] = [];
  let running = true;
  const loop = async () => {
    while (running) {
      try {
        const { statusCode, body } = await pool.request({ path: `${target.pathname}${target.search}`, method: 'GET', headers: { authorization } });
        await body.dump();
        if (statusCode >= 200 && statusCode <= 299) answered++;
        else failures.push(`status ${statusCode}`);
      } catch (error) {
        failures.push(error instanceof Error ? error.message : String(error));
        await sleep(100);
      }
    }
  };
  const loops = Array.from({ length: connections }, loop);
  return {
    answered: () => answered,
    failures: () => failures,
    async stop() {
      running = false;
      await Promise.all(loops);
      await pool.close();
    },
  };
}

/** One variant's counts: per round, instructions per request without the compiler and GC, and those two apart. */
export interface VariantCount {
  steady: number[];
  /** Answers other than 2xx in each round (keep-alive load only; a wrk round with one fails the count). */
  failed: number[];
  compiler: number[];
  gc: number[];
  /** Instructions by part over every round. */
  parts: Parts;
  requests: number;
}

/** Under callgrind a request takes tens of milliseconds, and seconds when the machine is busy: wrk's 2 s would drop them. */
const WRK_TIMEOUT_S = 60;

export async function countInstructions(bench: Bench, variants: readonly Variant[], options: CountOptions): Promise<VariantCount[]> {
  const connections = options.connections ?? 8;
  mkdirSync(options.outDir, { recursive: true });
  const control = (pid: number, ...args: string[]) => execFileSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8' });
  const running = await Promise.all(
    variants.map((variant, index) =>
      bench.launch(variant, {
        name: `${options.name ?? 'callgrind'}-${index}`,
        cpu: String(index % 2),
        // Counting starts when a round does; V8's JIT writes code it then runs, which valgrind must see.
        wrapper: [
          'valgrind',
          '--tool=callgrind',
          '--smc-check=all-non-file',
          '--instr-atstart=no',
          `--callgrind-out-file=${join(options.outDir, `gateway-${index}.out`)}`,
        ],
        startMs: 600_000,
        warmS: options.warmS,
        connections,
        wrkTimeoutS: WRK_TIMEOUT_S,
        warmUpErrorsAllowed: true,
      }),
    ),
  );
  options.progress?.(`warmed ${options.warmS} s under callgrind`);
  const loads =
    options.load === 'keep-alive'
      ? running.map(({ url }, index) => {
          const variant = variants[index]!;
          return keepAliveLoad(url, `Bearer ${bench.keyFor(variant)}`, connections, variant.tls ? readFileSync(bench.pki().caFile) : undefined);
        })
      : undefined;
  if (loads !== undefined) await sleep((options.settleS ?? 10) * 1000);
  const counts: VariantCount[] = variants.map(() => ({ steady: [], failed: [], compiler: [], gc: [], parts: new Map(), requests: 0 }));
  await reloadAfterWarm(variants, running, options);
  await options.aroundRounds?.before();
  for (let round = 1; round <= options.rounds; round++) {
    const rounds = await Promise.all(
      running.map(async ({ child, url }, index) => {
        control(child.pid!, '-z');
        const load = loads?.[index];
        const before = load?.answered() ?? 0;
        const failedBefore = load?.failures().length ?? 0;
        control(child.pid!, '-i', 'on');
        const requests =
          load === undefined
            ? await wrk(url, bench.keyFor(variants[index]!), options.durationS, connections, WRK_TIMEOUT_S)
            : await sleep(options.durationS * 1000).then(() => load.answered() - before);
        counts[index]!.failed.push((load?.failures().length ?? 0) - failedBefore);
        control(child.pid!, '-i', 'off');
        // The responses' last callbacks run before the dump.
        await sleep(500);
        control(child.pid!, '-d', `round ${round}`);
        return requests;
      }),
    );
    for (const [index, requests] of rounds.entries()) {
      // callgrind numbers each dump: <file>.<n>.
      const parts = partsOf(join(options.outDir, `gateway-${index}.out.${round}`));
      const total = [...parts.values()].reduce((sum, count) => sum + count, 0);
      const compiler = parts.get('compiler') ?? 0;
      const gc = parts.get('gc') ?? 0;
      const count = counts[index]!;
      count.steady.push((total - compiler - gc) / requests);
      count.compiler.push(compiler / requests);
      count.gc.push(gc / requests);
      count.requests += requests;
      for (const [part, instructions] of parts) count.parts.set(part, (count.parts.get(part) ?? 0) + instructions);
    }
    options.progress?.(
      `round ${round}: ${variants.map((variant, index) => `${variant.spec} ${Math.round(counts[index]!.steady.at(-1)!)}`).join(', ')} instructions/req`,
    );
  }
  await options.aroundRounds?.after();
  if (loads !== undefined) {
    await Promise.all(loads.map((load) => load.stop()));
    // Failed answers are counted per round (VariantCount.failed) for the caller to set those rounds apart; the first is told here.
    const failures = loads.flatMap((load, index) => load.failures().map((failure) => `${variants[index]!.spec}: ${failure}`));
    if (failures.length > 0) options.progress?.(`${failures.length} requests failed under callgrind, the first: ${failures[0]}`);
  }
  await bench.stop(
    running.map(({ child }) => child),
    60_000,
  );
  return counts;
}

/**
 * A variant with `BENCH_RELOAD_AFTER_WARM=<file>` (and its own `GATEWAY_CONFIG`) has that file copied over its configuration and is
 * sent SIGHUP once warm, then given `reloadSettleS` before the first round: a path the counted setting takes rarely
 * (`shadow.sample` 0.01: under callgrind a shadow every few seconds, never compiled) is warmed at a setting that takes it on every
 * request and counted at the rare one. A reload builds a new pipeline generation and leaves the one before to be collected:
 * the variant it is compared with is reloaded alike (its own file again), so that both count a gateway that has reloaded once.
 * Counting the rare setting from the start with a warm-up long enough for its path to be optimised is the less noisy way.
 */
async function reloadAfterWarm(variants: readonly Variant[], running: readonly { child: { kill(signal: NodeJS.Signals): boolean } }[], options: CountOptions) {
  let reloaded = false;
  for (const [index, variant] of variants.entries()) {
    const replacement = variant.extra.BENCH_RELOAD_AFTER_WARM;
    if (replacement === undefined) continue;
    const config = variant.extra.GATEWAY_CONFIG;
    if (config === undefined) throw new Error(`variant ${variant.spec}: BENCH_RELOAD_AFTER_WARM needs its own GATEWAY_CONFIG, the file it replaces`);
    copyFileSync(replacement, config);
    running[index]!.child.kill('SIGHUP');
    options.progress?.(`reloaded ${variant.spec} with ${replacement}`);
    reloaded = true;
  }
  if (reloaded) await sleep((options.reloadSettleS ?? 150) * 1000);
}
