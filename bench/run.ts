// npm run bench: listPets through three targets in one run: the backend directly, a bare Express proxy, the gateway.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { KeyAdmin } from '../src/auth/key-admin.ts';
import { createKeyHasher } from '../src/auth/key-hash.ts';
import { systemClock } from '../src/http/clock.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8);
/** Targets take turns for this many rounds; medians are reported, since loopback load here is noisy. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const FIXED_RATE = Number(process.env.BENCH_RATE ?? 1000);
const PEPPER = 'bench-pepper-0123456789abcdef';
/** On two cores: servers on core 0, the load generator on core 1, so it does not steal the servers' CPU. */
const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';

const children: ChildProcess[] = [];
// However the run ends, no server is left behind.
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
const workDir = mkdtempSync(join(tmpdir(), 'gateway-bench-'));

function pinned(cpu: string, command: string, args: string[]): [string, string[]] {
  return process.platform === 'linux' ? ['taskset', ['-c', cpu, command, ...args]] : [command, args];
}

/**
 * Output goes to a file, as a container runtime would collect it: the gateway pays for writing its
 * access log, and no reader process competes with the servers for their core.
 */
async function startServer(name: string, args: string[], env: Record<string, string> = {}): Promise<{ port: number; pid: number }> {
  const [command, argv] = pinned(SERVER_CPU, process.execPath, args);
  const logFile = join(workDir, `${name}.log`);
  const log = openSync(logFile, 'a');
  const child = spawn(command, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', log, log] });
  children.push(child);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    for (const line of readFileSync(logFile, 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      const parsed = JSON.parse(line) as { port?: number; msg?: string };
      // taskset execs the server, so the child's pid is the server's own.
      if (parsed.port !== undefined && (parsed.msg === undefined || parsed.msg === 'gateway listening')) return { port: parsed.port, pid: child.pid ?? 0 };
    }
    await sleep(20);
  }
  throw new Error(`${name} did not start; see ${workDir}/${name}.log`);
}

async function startRedis(): Promise<{ url: string }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', workDir], { stdio: 'ignore' });
  children.push(child);
  // The offline queue holds the PING until redis-server accepts connections.
  const client = new Redis({ port, retryStrategy: () => 50, maxRetriesPerRequest: null });
  client.on('error', () => {});
  await client.ping();
  client.disconnect();
  return { url: `redis://127.0.0.1:${port}` };
}

/** CPU seconds (user + system) a process has used so far, from its own accounting in /proc. */
const CLOCK_TICKS = 100; // getconf CLK_TCK on Linux
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

interface Result {
  rps: number;
  /** CPU microseconds the target's server process spent per request served. */
  cpuUsPerRequest: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function measure(target: { url: string; headers: Record<string, string>; pid: number }, extra: string[], durationS = DURATION_S): Promise<Result> {
  const before = cpuSeconds(target.pid);
  const result = await autocannon(target.url, target.headers, extra, durationS);
  const served = result.rps * durationS;
  return { ...result, cpuUsPerRequest: served > 0 ? ((cpuSeconds(target.pid) - before) * 1e6) / served : 0 };
}

function autocannon(url: string, headers: Record<string, string>, extra: string[], durationS = DURATION_S): Promise<Omit<Result, 'cpuUsPerRequest'>> {
  const headerArgs = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}=${value}`]);
  const [command, argv] = pinned(LOAD_CPU, process.execPath, [
    join(ROOT, 'node_modules/autocannon/autocannon.js'),
    '--json',
    '-d',
    String(durationS),
    ...headerArgs,
    ...extra,
    url,
  ]);
  return new Promise((resolve, reject) => {
    execFile(command, argv, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) return reject(error);
      if (!stdout.trim()) return reject(new Error(`autocannon printed no report: ${stderr}`));
      const report = JSON.parse(stdout) as {
        requests: { average: number };
        latency: { p50: number; p99: number };
        non2xx: number;
        errors: number;
      };
      resolve({ rps: report.requests.average, p50: report.latency.p50, p99: report.latency.p99, non2xx: report.non2xx, errors: report.errors });
    });
  });
}

function median(results: Result[]): Result {
  const middle = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return {
    rps: middle(results.map((result) => result.rps)),
    cpuUsPerRequest: middle(results.map((result) => result.cpuUsPerRequest)),
    p50: middle(results.map((result) => result.p50)),
    p99: middle(results.map((result) => result.p99)),
    non2xx: results.reduce((sum, result) => sum + result.non2xx, 0),
    errors: results.reduce((sum, result) => sum + result.errors, 0),
  };
}

function row(name: string, result: Result): string {
  return `${name.padEnd(28)} ${result.rps.toFixed(0).padStart(9)} ${result.cpuUsPerRequest.toFixed(0).padStart(9)} ${result.p50.toFixed(2).padStart(9)} ${result.p99.toFixed(2).padStart(9)} ${String(result.non2xx + result.errors).padStart(8)}`;
}

try {
  const redis = await startRedis();
  const backend = await startServer('backend', ['bench/backend.ts', '0']);
  const backendPort = backend.port;
  const backendUrl = `http://127.0.0.1:${backendPort}/v1`;
  const bareProxy = await startServer('bare-proxy', ['bench/bare-proxy.ts', `http://127.0.0.1:${backendPort}`, '0']);
  const gatewayServer = await startServer('gateway', ['src/main.ts'], {
    PORT: '0',
    ADMIN_PORT: '0',
    REDIS_URL: redis.url,
    UPSTREAM_URL: backendUrl,
    GATEWAY_ENVIRONMENT: 'production',
    API_KEY_PEPPER: PEPPER,
    LOG_LEVEL: 'info',
  });
  const adminRedis = new Redis(redis.url);
  const { key } = await new KeyAdmin(adminRedis, { keyPrefix: 'petstore-gateway:', hashKey: createKeyHasher(PEPPER), clock: systemClock }).create({
    consumer: 'bench',
    environments: ['production'],
    // Limits are counted (one Redis round trip per request) but never reached.
    rateLimitPerMinute: 1_000_000_000,
  });
  adminRedis.disconnect();

  const auth = { Authorization: `Bearer ${key}` };
  const targets = [
    { name: 'backend direct', url: `http://127.0.0.1:${backendPort}/v1/pets?limit=20&status=available`, headers: {}, pid: backend.pid },
    { name: 'bare express proxy', url: `http://127.0.0.1:${bareProxy.port}/v1/pets?limit=20&status=available`, headers: {}, pid: bareProxy.pid },
    { name: 'gateway (all features)', url: `http://127.0.0.1:${gatewayServer.port}/v1/pets?limit=20&status=available`, headers: auth, pid: gatewayServer.pid },
  ];

  process.stdout.write(
    `listPets, ${CONNECTIONS} connections, ${DURATION_S} s per run, ${ROUNDS} rounds (medians), servers on CPU ${SERVER_CPU}, load on CPU ${LOAD_CPU}\n\n`,
  );
  for (const target of targets) await autocannon(target.url, target.headers, ['-c', String(CONNECTIONS)], 3); // warm-up (JIT, pools)
  const runs: Result[][] = targets.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, target] of targets.entries()) runs[index]!.push(await measure(target, ['-c', String(CONNECTIONS)]));
    process.stdout.write(`round ${round + 1}: ${runs.map((results, index) => `${targets[index]!.name} ${results.at(-1)!.rps.toFixed(0)}`).join(', ')} req/s\n`);
  }
  process.stdout.write('\nThroughput (median of rounds)\ntarget                           req/s  CPU µs/req  p50 ms    p99 ms   failed\n');
  const throughput = runs.map(median);
  for (const [index, target] of targets.entries()) process.stdout.write(`${row(target.name, throughput[index]!)}\n`);
  const [direct, bare, gateway] = throughput as [Result, Result, Result];
  process.stdout.write(
    `\nratios: gateway/bare-proxy ${(gateway.rps / bare.rps).toFixed(3)}  gateway/direct ${(gateway.rps / direct.rps).toFixed(3)}  bare-proxy/direct ${(bare.rps / direct.rps).toFixed(3)}\n`,
  );
  process.stdout.write(
    `CPU per request: gateway/bare-proxy ${(gateway.cpuUsPerRequest / bare.cpuUsPerRequest).toFixed(2)}  bare-proxy/direct ${(bare.cpuUsPerRequest / direct.cpuUsPerRequest).toFixed(2)}\n`,
  );
  process.stdout.write(`features cost ${((1 - gateway.rps / bare.rps) * 100).toFixed(1)}% of bare-proxy throughput (aim: under 15%)\n\n`);

  process.stdout.write(`Fixed rate: ${FIXED_RATE} req/s\ntarget                           req/s  CPU µs/req  p50 ms    p99 ms   failed\n`);
  const fixed: Result[] = [];
  for (const target of targets) {
    const result = await measure(target, ['-c', '20', '-R', String(FIXED_RATE)]);
    fixed.push(result);
    process.stdout.write(`${row(target.name, result)}\n`);
  }
  const [directFixed, bareFixed, gatewayFixed] = fixed as [Result, Result, Result];
  process.stdout.write(
    `\nadded latency vs direct: bare proxy p50 +${(bareFixed.p50 - directFixed.p50).toFixed(2)} ms, p99 +${(bareFixed.p99 - directFixed.p99).toFixed(2)} ms; ` +
      `gateway p50 +${(gatewayFixed.p50 - directFixed.p50).toFixed(2)} ms, p99 +${(gatewayFixed.p99 - directFixed.p99).toFixed(2)} ms (aim: p99 under +2 ms)\n`,
  );
  const failures = [...throughput, ...fixed].reduce((sum, result) => sum + result.non2xx + result.errors, 0);
  if (failures > 0) {
    process.stdout.write(`\n${failures} requests failed: the figures above are not comparable (logs in ${workDir})\n`);
    process.exitCode = 1;
  }
} finally {
  for (const child of children) child.kill('SIGKILL');
}
