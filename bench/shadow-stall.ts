// Production's latency while every request is shadowed to a staging that never answers: the paced load of `npm run bench`
// (bench/wrk/paced.lua, BENCH_RATE req/s, default 1,000) on a gateway without shadowing and on one with SHADOW_SAMPLE=1 to a
// staging that accepts connections and never answers, in alternated rounds (BENCH_SHADOW_ROUNDS, default 3, of
// BENCH_DURATION_S, default 10). Prints each round's p50/p99/p99.9, the shadows skipped and the gateway's RSS.
//   npm run build && node bench/shadow-stall.ts        BENCH_SHADOW_NAME=<name> also writes bench/results/<date>-<name>.json
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseVariants, type RunningVariant, startBench } from './gateway-variants.ts';
import { runOrigin } from './results-file.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const CONNECTIONS = 10 + Math.max(0, Math.ceil((RATE - 1000) / 100));
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const ROUNDS = Number(process.env.BENCH_SHADOW_ROUNDS ?? 3);
const NAME = process.env.BENCH_SHADOW_NAME;
/** What is measured is the build at the start: its commit. */
const ORIGIN = runOrigin(ROOT, new Date());

// Staging: every connection accepted and read, no byte ever written back.
const held = new Set<Socket>();
let heard = 0;
const staging = createServer((socket) => {
  held.add(socket);
  socket.on('data', () => heard++);
  socket.on('error', () => undefined);
  socket.on('close', () => held.delete(socket));
});
await new Promise<void>((resolve) => staging.listen(0, '127.0.0.1', resolve));
const stagingPort = (staging.address() as AddressInfo).port;

interface Round {
  variant: string;
  round: number;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  failed: number;
  skipped: number;
  rssMb: number;
}

function paced(url: string, key: string): Promise<{ requests: number; p50: number; p99: number; p999: number; failed: number }> {
  const args = ['-c', '1', 'wrk', '-t1', '-d', `${DURATION_S}s`, '--timeout', '10s', '-H', `Authorization: Bearer ${key}`];
  args.push('-c', String(CONNECTIONS), '-s', join(ROOT, 'bench/wrk/paced.lua'), url, '--', String(RATE), String(CONNECTIONS));
  return new Promise((resolve, reject) => {
    execFile('taskset', args, (error, stdout, stderr) => {
      if (error) return reject(new Error(`wrk: ${stderr || stdout}`));
      const report = JSON.parse(stdout.split('\n').findLast((line) => line.startsWith('{'))!) as Record<string, number>;
      const failed = report.non2xx! + report.connect! + report.read! + report.write! + report.timeout!;
      resolve({ requests: report.requests!, p50: report.p50! / 1000, p99: report.p99! / 1000, p999: report.p999! / 1000, failed });
    });
  });
}

async function skipped(running: RunningVariant): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${running.adminPort}/metrics`)).text();
  return [...text.matchAll(/^petstore_gateway_shadow_comparisons_total\{[^}]*result="skipped"[^}]*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0);
}

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

const variants = parseVariants(['off', `shadow,SHADOW_SAMPLE=1,SHADOW_UPSTREAM_URL=http://127.0.0.1:${stagingPort}/v1`]);
const bench = await startBench();
const rounds: Round[] = [];
try {
  const running: RunningVariant[] = [];
  for (const [index, variant] of variants.entries()) running.push(await bench.launch(variant, { name: `stall-${index}`, cpu: '0', warmS: 5, startMs: 60_000 }));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [index, variant] of variants.entries()) {
      const target = running[index]!;
      const before = await skipped(target);
      const result = await paced(target.url, bench.keyFor(variant));
      const row: Round = {
        variant: variant.spec.split(',')[0]!,
        round,
        requests: result.requests,
        p50Ms: result.p50,
        p99Ms: result.p99,
        p999Ms: result.p999,
        failed: result.failed,
        skipped: (await skipped(target)) - before,
        rssMb: rssMb(target.child.pid!),
      };
      rounds.push(row);
      process.stdout.write(`${JSON.stringify(row)}\n`);
    }
  }
  process.stdout.write(`staging connections held: ${held.size}, requests heard: ${heard}\n`);
  if (NAME !== undefined) {
    const file = join(ROOT, 'bench/results', `${new Date().toISOString().slice(0, 10)}-${NAME}.json`);
    writeFileSync(file, `${JSON.stringify({ origin: ORIGIN, rate: RATE, durationS: DURATION_S, rounds, stagingConnections: held.size }, null, 2)}\n`);
  }
} catch (error) {
  // A gateway that did not start says why in its log, which close() removes.
  for (const index of variants.keys()) {
    const log = join(bench.workDir, `stall-${index}.log`);
    if (existsSync(log)) process.stderr.write(`${log}:\n${readFileSync(log, 'utf8').split('\n').slice(-5).join('\n')}\n`);
  }
  throw error;
} finally {
  bench.close();
  for (const socket of held) socket.destroy();
  staging.close();
}
