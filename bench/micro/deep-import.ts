// node bench/micro/deep-import.ts: what undici's public entry costs against its Pool module alone, at start-up
// and in memory: each variant in a fresh process (npm start's V8 flags), in turn, medians. Alone, then inside
// the gateway's module graph (dist/wiring/compose.js, which imports the exchange). Per request the class is
// the same (checked below); bench/micro/proxy-leg.ts runs the exchange with and without the index loaded.
// Decision record 0004. Environment: MICRO_RUNS (fresh processes per variant, default 15).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { buildGateway, START_ARGS } from '../../support/start-gateway-process.ts';

const RUNS = Math.max(5, Number(process.env.MICRO_RUNS ?? 15));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CPU = process.env.MICRO_SERVER_CPU ?? '0';
const NODE_FLAGS = START_ARGS.filter((arg) => arg.startsWith('--'));
const COMPOSE = new URL('dist/wiring/compose.js', new URL('../../', import.meta.url)).href;

const variants: Array<{ name: string; imports: string[] }> = [
  { name: 'nothing (node itself)', imports: [] },
  { name: "'undici/lib/dispatcher/pool.js'", imports: ['undici/lib/dispatcher/pool.js'] },
  { name: "'undici' (public entry)", imports: ['undici'] },
  { name: 'gateway graph (deep import)', imports: [COMPOSE] },
  { name: "gateway graph + 'undici'", imports: ['undici', COMPOSE] },
];

interface Sample {
  ms: number;
  /** CPU the imports took (user + system): steadier than their wall time on a shared machine. */
  cpuMs: number;
  rssMb: number;
  heapMb: number;
  undiciFiles: number;
}

/** One fresh process: imports timed, then a full GC, resident and heap memory, and undici's files loaded. */
function run(imports: string[]): Sample {
  const code = `
    const started = performance.now();
    const cpu = process.cpuUsage();
    for (const specifier of ${JSON.stringify(imports)}) await import(specifier);
    const ms = performance.now() - started;
    const { user, system } = process.cpuUsage(cpu);
    globalThis.gc();
    const { rss, heapUsed } = process.memoryUsage();
    const files = Object.keys(process.getBuiltinModule('node:module').createRequire(import.meta.url).cache);
    process.stdout.write(JSON.stringify({ ms, cpuMs: (user + system) / 1000, rssMb: rss / 2 ** 20, heapMb: heapUsed / 2 ** 20, undiciFiles: files.filter((file) => file.includes('/undici/')).length }));`;
  const argv = ['-c', CPU, process.execPath, ...NODE_FLAGS, '--expose-gc', '--input-type=module', '-e', code];
  return JSON.parse(execFileSync('taskset', argv, { cwd: ROOT, encoding: 'utf8' })) as Sample;
}

buildGateway();
const same = execFileSync(
  process.execPath,
  [
    '--input-type=module',
    '-e',
    "const a = (await import('undici')).Pool; const b = (await import('undici/lib/dispatcher/pool.js')).default; process.stdout.write(String(a === b));",
  ],
  { cwd: ROOT, encoding: 'utf8' },
);

const samples = variants.map((): Sample[] => []);
for (let round = 0; round < RUNS; round++) for (const [index, variant] of variants.entries()) samples[index]!.push(run(variant.imports));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const rows = samples.map((runs) => ({
  ms: median(runs.map((sample) => sample.ms)),
  cpuMs: median(runs.map((sample) => sample.cpuMs)),
  rss: median(runs.map((sample) => sample.rssMb)),
  heap: median(runs.map((sample) => sample.heapMb)),
  files: median(runs.map((sample) => sample.undiciFiles)),
}));

const width = Math.max(...variants.map((variant) => variant.name.length));
process.stdout.write(
  `Imports in a fresh process on CPU ${CPU} (node ${process.version} ${NODE_FLAGS.join(' ')}), ${RUNS} runs each in turn, medians; ` +
    `memory after a full GC\n${'imported'.padEnd(width)}  import ms  CPU ms    RSS MB  heap MB  undici files\n`,
);
for (const [index, row] of rows.entries()) {
  process.stdout.write(
    `${variants[index]!.name.padEnd(width)} ${row.ms.toFixed(1).padStart(10)} ${row.cpuMs.toFixed(1).padStart(7)} ${row.rss.toFixed(1).padStart(9)} ${row.heap.toFixed(2).padStart(8)} ${String(row.files).padStart(13)}\n`,
  );
}
const delta = (a: number, b: number) => ({
  ms: rows[b]!.ms - rows[a]!.ms,
  cpuMs: rows[b]!.cpuMs - rows[a]!.cpuMs,
  rss: rows[b]!.rss - rows[a]!.rss,
  heap: rows[b]!.heap - rows[a]!.heap,
});
const alone = delta(1, 2);
const inGateway = delta(3, 4);
process.stdout.write(
  `\nThe public entry costs, over the Pool module: alone +${alone.ms.toFixed(1)} ms (CPU +${alone.cpuMs.toFixed(1)} ms), +${alone.rss.toFixed(1)} MB RSS, +${alone.heap.toFixed(2)} MB heap; ` +
    `in the gateway's graph +${inGateway.ms.toFixed(1)} ms (CPU +${inGateway.cpuMs.toFixed(1)} ms), +${inGateway.rss.toFixed(1)} MB RSS, +${inGateway.heap.toFixed(2)} MB heap\n` +
    `undici's index exports the same Pool class as its module: ${same}\n`,
);
