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
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseVariants, startBench, wrk } from './gateway-variants.ts';

const ROUNDS = Number(process.env.INSTRUCTIONS_ROUNDS ?? 3);
const DURATION_S = Number(process.env.INSTRUCTIONS_DURATION_S ?? 20);
const WARM_S = Number(process.env.INSTRUCTIONS_WARM_S ?? 120);
const CONNECTIONS = 8;
/** Under callgrind a request takes tens of milliseconds, and seconds when the machine is busy: wrk's 2 s would drop them. */
const WRK_TIMEOUT_S = 60;

/** Where an instruction was executed, by the function callgrind names (V8's JIT code has no name: `???`). */
const PARTS: ReadonlyArray<readonly [string, RegExp]> = [
  ['compiler', /compiler::|maglev|turboshaft|Turboshaft|Maglev/],
  ['gc', /Scaveng|MarkCompact|Heap::|heap::|Sweeper|Marking|Evacuat|MemoryAllocator|RememberedSet|SlotSet|MinorMark|PagedSpace|NewSpace|GCTracer|cppgc/],
  ['builtins', /Builtins_/],
  ['jit', /\[\?\?\?\]$/],
  ['libc', /libc\.so/],
  ['v8 runtime', /v8::/],
];

type Parts = Map<string, number>;

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

try {
  execFileSync('valgrind', ['--version']);
} catch {
  process.stderr.write('bench/instructions.ts needs valgrind (Debian: apt-get install valgrind)\n');
  process.exit(2);
}
const variants = parseVariants(process.argv.slice(2));
const bench = await startBench();
const outDir = process.env.INSTRUCTIONS_KEEP || join(bench.workDir, 'callgrind');
mkdirSync(outDir, { recursive: true });
const control = (pid: number, ...args: string[]) => execFileSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8' });

try {
  const running = await Promise.all(
    variants.map((variant, index) =>
      bench.launch(variant, {
        name: `gateway-${index}`,
        cpu: String(index % 2),
        // Counting starts when a round does; V8's JIT writes code it then runs, which valgrind must see.
        wrapper: [
          'valgrind',
          '--tool=callgrind',
          '--smc-check=all-non-file',
          '--instr-atstart=no',
          `--callgrind-out-file=${join(outDir, `gateway-${index}.out`)}`,
        ],
        startMs: 600_000,
        warmS: WARM_S,
        connections: CONNECTIONS,
        wrkTimeoutS: WRK_TIMEOUT_S,
      }),
    ),
  );
  process.stdout.write(`warmed ${WARM_S} s under callgrind\n`);
  const counts = variants.map(() => ({ steady: [] as number[], compiler: [] as number[], gc: [] as number[], parts: new Map<string, number>(), requests: 0 }));
  for (let round = 1; round <= ROUNDS; round++) {
    const rounds = await Promise.all(
      running.map(async ({ child, url }, index) => {
        control(child.pid!, '-z');
        control(child.pid!, '-i', 'on');
        const requests = await wrk(url, bench.keyFor(variants[index]!), DURATION_S, CONNECTIONS, WRK_TIMEOUT_S);
        control(child.pid!, '-i', 'off');
        // The responses' last callbacks run before the dump.
        await sleep(500);
        control(child.pid!, '-d', `round ${round}`);
        return requests;
      }),
    );
    for (const [index, requests] of rounds.entries()) {
      // callgrind numbers each dump: <file>.<n>.
      const parts = partsOf(join(outDir, `gateway-${index}.out.${round}`));
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
    process.stdout.write(
      `round ${round}: ${variants.map((variant, index) => `${variant.spec} ${Math.round(counts[index]!.steady.at(-1)!)}`).join(', ')} instructions/req\n`,
    );
  }
  await bench.stop(
    running.map(({ child }) => child),
    60_000,
  );
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
  if (process.env.INSTRUCTIONS_KEEP) process.stdout.write(`callgrind files in ${outDir}\n`);
} finally {
  bench.close();
}
