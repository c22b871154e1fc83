// System calls per request, by call: each variant's process alone under load, `strace -c -f` attached for a fixed
// run. Beside bench/instructions.ts, which does not see the kernel: it tells whether a difference in CPU time that the
// instruction counts do not explain is the system calls' (their number, not their time: strace slows every call).
//   node bench/syscalls.ts [variant...]   variants as bench/gateway-variants.ts reads them (default: off fastify fast-gateway)
// SYSCALLS_WARM_S (default 30) of load first, then SYSCALLS_DURATION_S (default 10) counted, `wrk -c8`, each variant in
// turn on core 0 (the load on the other). SYSCALLS_NAME=<name> also writes bench/results/<date>-<name>.json.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseVariants, ROOT, startBench, wrk } from './gateway-variants.ts';
import { runNameProblem, runOrigin, writeRunResults } from './results-file.ts';

const WARM_S = Number(process.env.SYSCALLS_WARM_S || 30);
const DURATION_S = Number(process.env.SYSCALLS_DURATION_S || 10);
const NAME = process.env.SYSCALLS_NAME || undefined;
for (const [name, value] of [
  ['SYSCALLS_WARM_S', WARM_S],
  ['SYSCALLS_DURATION_S', DURATION_S],
] as const) {
  if (!Number.isFinite(value) || value <= 0) {
    process.stderr.write(`${name} must be a positive number of seconds\n`);
    process.exit(2);
  }
}
if (NAME !== undefined && runNameProblem(NAME) !== undefined) {
  process.stderr.write(`SYSCALLS_NAME ${NAME}: ${runNameProblem(NAME)}\n`);
  process.exit(2);
}
const STARTED = new Date();
const ORIGIN = runOrigin(ROOT, STARTED);

/** strace -c's table: calls by system call (its "total" row left out). */
function callsByName(table: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const line of table.split('\n')) {
    // % time, seconds, usecs/call, calls, [errors,] syscall
    const columns = line.trim().split(/\s+/);
    const name = columns.at(-1);
    if (columns.length < 5 || !/^\d/.test(columns[0]!) || name === undefined || name === 'total') continue;
    calls.set(name, Number(columns[3]));
  }
  return calls;
}

const args = process.argv.slice(2);
const variants = parseVariants(args.length > 0 ? args : ['off', 'fastify', 'fast-gateway']);
const bench = await startBench();
const work = mkdtempSync(join(tmpdir(), 'syscalls-'));
const results: Array<{ spec: string; requests: number; perRequest: Record<string, number>; totalPerRequest: number }> = [];
try {
  for (const [index, variant] of variants.entries()) {
    const running = await bench.launch(variant, { name: `syscalls-${index}`, cpu: '0', warmS: WARM_S });
    try {
      const table = join(work, `strace-${index}.txt`);
      const tracer = spawn('strace', ['-c', '-f', '-p', String(running.child.pid), '-o', table], { stdio: 'ignore' });
      const traced = new Promise((resolve) => tracer.on('exit', resolve));
      // strace attaches to every thread before the load starts.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const requests = await wrk(running.url, bench.keyFor(variant), DURATION_S, 8);
      tracer.kill('SIGINT');
      await traced;
      const calls = callsByName(readFileSync(table, 'utf8'));
      const perRequest = Object.fromEntries([...calls].sort((a, b) => b[1] - a[1]).map(([name, count]) => [name, count / requests]));
      const totalPerRequest = [...calls.values()].reduce((sum, count) => sum + count, 0) / requests;
      results.push({ spec: variant.spec, requests, perRequest, totalPerRequest });
      const listed = Object.entries(perRequest)
        .filter(([, count]) => count >= 0.01)
        .map(([name, count]) => `${name} ${count.toFixed(2)}`)
        .join(', ');
      process.stdout.write(`${variant.spec.padEnd(32)} ${totalPerRequest.toFixed(2)} system calls a request (${requests} requests): ${listed}\n`);
    } finally {
      await bench.stop([running.child]);
    }
  }
  if (NAME !== undefined) {
    const file = writeRunResults(join(ROOT, 'bench/results'), NAME, STARTED, {
      ...ORIGIN,
      bench: 'syscalls',
      settings: { warmS: WARM_S, durationS: DURATION_S, connections: 8 },
      variants: results,
    });
    process.stdout.write(`results: ${file}\n`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
  bench.close();
}
