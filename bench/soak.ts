// npm run soak: two gateway replicas under sustained load for minutes, the backend killed and restarted
// and Redis failed over (Sentinel) in the middle. Reports what was served and what failed, and checks
// that nothing unauthenticated passed, no process crashed and memory stayed bounded.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { KeyAdmin } from '../src/auth/key-admin.ts';
import { createKeyHasher } from '../src/auth/key-hash.ts';
import { systemClock } from '../src/time/clock.ts';
import { buildGateway, START_ARGS } from '../support/start-gateway-process.ts';
import { startSentinels } from '../support/start-sentinel.ts';
import { unusedPort } from '../support/start-upstream.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DURATION_S = Number(process.env.SOAK_DURATION_S ?? 180);
const CONNECTIONS = Number(process.env.SOAK_CONNECTIONS ?? 20);
const BACKEND_OUTAGE_S = 5;
const WARM_UP_S = 15;
/** Documented bound: a replica's resident memory may grow by at most this over the run. */
const MAX_RSS_GROWTH_MIB = 64;
const PEPPER = 'soak-pepper-0123456789abcdef';

buildGateway(); // npm start runs the compiled gateway (dist/)
const workDir = mkdtempSync(join(tmpdir(), 'gateway-soak-'));
const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

function spawnLogged(name: string, args: string[], env: Record<string, string> = {}): ChildProcess {
  const log = openSync(join(workDir, `${name}.log`), 'a');
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', log, log] });
  children.push(child);
  return child;
}

async function waitForLine(name: string, pattern: RegExp): Promise<string> {
  for (let i = 0; i < 300; i++) {
    const line = readFileSync(join(workDir, `${name}.log`), 'utf8')
      .split('\n')
      .find((entry) => pattern.test(entry));
    if (line) return line;
    await sleep(50);
  }
  throw new Error(`${name} did not start; see ${workDir}/${name}.log`);
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

interface Report {
  requests: { total: number };
  latency: { p50: number; p99: number };
  statusCodeStats?: Record<string, { count: number }>;
  errors: number;
  timeouts: number;
}

function load(port: number, key: string, durationS = DURATION_S): Promise<Report> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [
        join(ROOT, 'node_modules/autocannon/autocannon.js'),
        '--json',
        '-c',
        String(CONNECTIONS),
        '-d',
        String(durationS),
        '-t',
        '15',
        '-H',
        `Authorization=Bearer ${key}`,
        `http://127.0.0.1:${port}/v1/pets?limit=10`,
      ],
      { maxBuffer: 64 * 1024 * 1024 },
      (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout) as Report)),
    );
  });
}

const sentinels = await startSentinels();
// Its stop() kills synchronously: no Redis or sentinel outlives a failed run either.
process.on('exit', () => void sentinels.stop());
const backendPort = await unusedPort();
let backend = spawnLogged('backend', ['bench/backend.ts', String(backendPort)]);
await waitForLine('backend', /"port"/);
const gatewayEnv = {
  PORT: '0',
  ADMIN_PORT: '0',
  REDIS_SENTINELS: sentinels.sentinels,
  REDIS_SENTINEL_NAME: sentinels.name,
  UPSTREAM_URL: `http://127.0.0.1:${backendPort}/v1`,
  GATEWAY_ENVIRONMENT: 'production',
  API_KEY_PEPPER: PEPPER,
  LOG_LEVEL: 'info',
};
const replicas = ['gateway-a', 'gateway-b'].map((name) => ({ name, child: spawnLogged(name, [...START_ARGS], gatewayEnv), port: 0 }));
for (const replica of replicas) replica.port = (JSON.parse(await waitForLine(replica.name, /"gateway listening"/)) as { port: number }).port;

const adminRedis = new Redis({
  sentinels: sentinels.sentinelPorts.map((port) => ({ host: '127.0.0.1', port })),
  name: sentinels.name,
  maxRetriesPerRequest: null,
});
adminRedis.on('error', () => {});
const { key } = await new KeyAdmin(adminRedis, { keyPrefix: 'petstore-gateway:', hashKey: createKeyHasher(PEPPER), clock: systemClock }).create({
  consumer: 'soak',
  environments: ['production'],
  rateLimitPerMinute: 100_000_000,
});
adminRedis.disconnect();

// Warm up under the same load (JIT, heap sizing, pools), then take the memory baseline.
await Promise.all(replicas.map((replica) => load(replica.port, key, WARM_UP_S)));
await sleep(1000);
const rssBefore = replicas.map((replica) => rssMiB(replica.child.pid!));

// Unauthenticated probes all along: none may ever be answered 200.
const probes = { sent: 0, passed: 0, statuses: new Map<number, number>() };
let probing = true;
const prober = (async () => {
  while (probing) {
    for (const replica of replicas) {
      for (const headers of [{}, { Authorization: `Bearer psk_live_${'P'.repeat(43)}` }]) {
        const res = await fetch(`http://127.0.0.1:${replica.port}/v1/pets`, { headers }).catch(() => undefined);
        if (!res) continue;
        await res.arrayBuffer();
        probes.sent++;
        if (res.status === 200) probes.passed++;
        probes.statuses.set(res.status, (probes.statuses.get(res.status) ?? 0) + 1);
      }
    }
    await sleep(50);
  }
})();

process.stdout.write(`soak: ${DURATION_S} s, ${CONNECTIONS} connections per replica, two replicas; logs in ${workDir}\n`);
const started = Date.now();
const loads = replicas.map((replica) => load(replica.port, key));

await sleep((DURATION_S * 1000) / 3);
process.stdout.write(`t=${((Date.now() - started) / 1000).toFixed(0)} s: backend killed\n`);
backend.kill('SIGKILL');
await sleep(BACKEND_OUTAGE_S * 1000);
backend = spawnLogged('backend', ['bench/backend.ts', String(backendPort)]);
process.stdout.write(`t=${((Date.now() - started) / 1000).toFixed(0)} s: backend restarted\n`);

await sleep(Math.max(0, (DURATION_S * 2000) / 3 - (Date.now() - started)));
process.stdout.write(`t=${((Date.now() - started) / 1000).toFixed(0)} s: Redis primary killed (Sentinel failover)\n`);
await sentinels.killPrimary();

const reports = await Promise.all(loads);
probing = false;
await prober;
await sleep(1000);
const rssAfter = replicas.map((replica) => rssMiB(replica.child.pid!));

let failed = false;
process.stdout.write('\nreplica     requests    p50 ms   p99 ms   statuses                                   errors  rss before -> after (MiB)\n');
for (const [index, replica] of replicas.entries()) {
  const report = reports[index]!;
  const statuses = Object.entries(report.statusCodeStats ?? {})
    .map(([code, { count }]) => `${code}:${count}`)
    .join(' ');
  const growth = rssAfter[index]! - rssBefore[index]!;
  process.stdout.write(
    `${replica.name.padEnd(10)} ${String(report.requests.total).padStart(10)} ${report.latency.p50.toFixed(1).padStart(9)} ${report.latency.p99.toFixed(1).padStart(8)}   ${statuses.padEnd(42)} ${String(report.errors + report.timeouts).padStart(6)}  ${rssBefore[index]!.toFixed(0)} -> ${rssAfter[index]!.toFixed(0)}\n`,
  );
  if (growth > MAX_RSS_GROWTH_MIB) {
    process.stdout.write(`FAIL: ${replica.name} grew ${growth.toFixed(0)} MiB (bound ${MAX_RSS_GROWTH_MIB} MiB)\n`);
    failed = true;
  }
  if (replica.child.exitCode !== null || replica.child.signalCode !== null) {
    process.stdout.write(`FAIL: ${replica.name} exited (${replica.child.exitCode ?? replica.child.signalCode})\n`);
    failed = true;
  }
  const log = readFileSync(join(workDir, `${replica.name}.log`), 'utf8');
  for (const bad of ['unhandled promise rejection', 'uncaught exception']) {
    if (log.includes(bad)) {
      process.stdout.write(`FAIL: ${replica.name} logged "${bad}"\n`);
      failed = true;
    }
  }
}
process.stdout.write(
  `\nunauthenticated probes: ${probes.sent} sent, ${probes.passed} answered 200; statuses ${JSON.stringify(Object.fromEntries(probes.statuses))}\n`,
);
if (probes.passed > 0) failed = true;
process.stdout.write(failed ? '\nsoak: FAILED\n' : '\nsoak: passed\n');
await sentinels.stop();
process.exit(failed ? 1 : 0);
