// npm run bench: listPets through every target in one run: the backend directly, nginx (when installed),
// the Node floor (node:http + undici's Pool, no features), a bare Express + http-proxy-middleware proxy, and the gateway with every feature on (exact rate limits, then
// local-first ones, then exact ones with every request traced and its spans exported over OTLP). Load from wrk.
// Every figure of a run is written to bench/results/<date>-<name>.json as well (--help lists the settings).
// `npm run bench -- tls` runs the TLS bench instead (bench/tls.ts): the floor and the gateway, plain and behind TLS on both legs.
// `npm run bench -- peers` runs the gateway against the floor and the peers (bench/peers/) in alternated rounds (bench/tracecost.ts).
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { constants, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultRunName, runNameProblem, runOrigin, writeRunResults } from './results-file.ts';
import { runTlsBench, TLS_USAGE } from './tls.ts';
import { Redis } from 'ioredis';
import { KeyAdmin } from '../src/auth/key-admin.ts';
import { createKeyHasher } from '../src/auth/key-hash.ts';
import { writeSigningKeyFile } from '../src/identity/generate-key.ts';
import { buildGateway, START_ARGS } from '../support/start-gateway-process.ts';
import { privateRedisArgs } from '../support/start-redis.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const USAGE = `usage: npm run bench -- [tls | peers] [--name NAME] [--results-dir DIR]

Runs GET /v1/pets?limit=20&status=available through the backend directly, nginx (when installed), the Node
floor, a bare Express proxy and the gateway (exact rate limits, local-first ones, tracing 100%), the targets
taking turns; saturating rounds, then paced ones. Prints the medians and the targets' verdicts, and writes
every figure to DIR/<date>-<NAME>.json (an earlier file is never overwritten: -2, -3 are added).

options:
  --name NAME         names the results file (default: the short commit)
  --results-dir DIR   where the results file goes (default: bench/results)
  -h, --help          prints this and exits

environment:
  BENCH_DURATION_S        seconds of each measured run (8)
  BENCH_ROUNDS            rounds, the targets in turn; medians reported (3)
  BENCH_CONNECTIONS       connections of the saturating runs (50)
  BENCH_RATE              the paced rate, requests per second (1000)
  BENCH_SERVER_CPU        the CPU the servers are pinned to (0)
  BENCH_LOAD_CPU          the CPU wrk is pinned to (1)
  BENCH_REDIS_CPU         the CPU of redis-server (the load CPU; empty: unpinned)
  BENCH_SINK_CPU          the CPU of the OTLP sink (the load CPU; empty: unpinned)
  BENCH_NGINX             the nginx binary (default: nginx on PATH; empty: leave nginx out)
  BENCH_PREVIOUS_GATEWAY  a built checkout of another commit, measured as one more target

Any failed request makes it exit 1. docs/performance.md says how to read the figures.

npm run bench -- peers: the gateway (every feature on, tracing off), the Node floor, and the peers doing the same
job (bench/peers/: Fastify 5 with @fastify/reply-from, @fastify/rate-limit on Redis and fastify-metrics; fast-gateway
with prom-client metrics), each checked to answer 200, 401 and 429 first, in alternated rounds of new processes
(bench/tracecost.ts; TRACECOST_ROUNDS, default here 12, TRACECOST_DURATION_S, default here 4): CPU a request and
requests a second, each one's ratio to the gateway by round with the middle half. Results: <date>-<NAME>-peers.json.
Instructions a request: node bench/instructions.ts off floor fastify fast-gateway.

${TLS_USAGE}`;

/** The command line's options; a wrong one prints the usage and exits 2, before anything is started. */
function benchArgs() {
  try {
    const { values, positionals } = parseArgs({
      options: { name: { type: 'string' }, 'results-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
    });
    const problem = values.name === undefined ? undefined : runNameProblem(values.name);
    if (problem !== undefined) throw new Error(`--name ${values.name}: ${problem}`);
    if (positionals.length > 1 || (positionals[0] !== undefined && positionals[0] !== 'tls' && positionals[0] !== 'peers'))
      throw new Error(`${positionals.join(' ')}: the benches that run alone are tls and peers`);
    return { ...values, tls: positionals[0] === 'tls', peers: positionals[0] === 'peers' };
  } catch (error) {
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
    return process.exit(2);
  }
}
const args = benchArgs();
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const RUN_NAME = args.name ?? defaultRunName(ROOT);
const RESULTS_DIR = args['results-dir'] ?? join(ROOT, 'bench/results');
if (args.tls) process.exit(await runTlsBench({ root: ROOT, runName: args.name ?? `${RUN_NAME}-tls`, resultsDir: RESULTS_DIR }));
if (args.peers) {
  const peers = spawn(process.execPath, [join(ROOT, 'bench/tracecost.ts'), 'off', 'floor', 'fastify', 'fast-gateway'], {
    stdio: 'inherit',
    env: { TRACECOST_ROUNDS: '12', TRACECOST_DURATION_S: '4', ...process.env, TRACECOST_NAME: args.name ?? `${RUN_NAME}-peers` },
  });
  process.exit(await new Promise<number>((resolve) => peers.on('exit', (code) => resolve(code ?? 1))));
}
const STARTED = new Date();
const ORIGIN = runOrigin(ROOT, STARTED);
const WRK_SCRIPTS = join(ROOT, 'bench/wrk');
const DURATION_S = Math.max(1, Math.round(Number(process.env.BENCH_DURATION_S ?? 8)));
/** Targets take turns for this many rounds; medians are reported, since loopback load here is noisy. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
/** Connections of the saturating runs (one wrk thread: the load generator has one core). */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
/** The paced rate, requests per second, spread evenly over 10 connections (one more per 100 req/s above 1,000). */
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const PACED_CONNECTIONS = Math.max(10, Math.ceil(RATE / 100));
/** The paced runs count as paced when they reach this share of RATE (and no more than 1/this). */
const PACE_TOLERANCE = 0.98;
const WARM_UP_S = 3;
const PACED_WARM_UP_S = 8;
const PEPPER = 'bench-pepper-0123456789abcdef';
/** On two cores: servers on core 0, the load generator on core 1, so it does not steal the servers' CPU. */
const SERVER_CPU = process.env.BENCH_SERVER_CPU ?? '0';
const LOAD_CPU = process.env.BENCH_LOAD_CPU ?? '1';
/**
 * redis-server shares the load generator's core by default: in production it runs on another host, and on
 * the servers' core it would take CPU from the gateway that the bare proxy does not pay. Its own CPU per
 * request is reported apart. BENCH_REDIS_CPU='' leaves it unpinned.
 */
const REDIS_CPU = process.env.BENCH_REDIS_CPU ?? LOAD_CPU;
/**
 * The OTLP collector (bench/otlp-sink.ts) of the traced gateway shares the load generator's core too, for
 * redis-server's reason: a collector is another process, on another host or a node agent; on the servers'
 * core its CPU would come out of the traced gateway's share, work the untraced gateway does not compete
 * with. It counts spans without decoding them, so it takes little from wrk. Its own CPU per request is
 * reported apart. BENCH_SINK_CPU='' leaves it unpinned.
 */
const SINK_CPU = process.env.BENCH_SINK_CPU ?? LOAD_CPU;
/**
 * Spans the gateway records per proxied request: its SERVER span, the `authenticate` and `rate_limit`
 * stages' spans, the `redis` span of its wait for the exact store's count, and the CLIENT span of the
 * upstream call (another `redis` span on a key-cache miss, rare here).
 */
const SPANS_PER_REQUEST = 5;
/**
 * BENCH_PREVIOUS_GATEWAY: a checkout of an earlier commit (its node_modules installed, `npm run build` run),
 * whose gateway joins the run as one more target, started as this one is: "tracing off" against the build
 * before tracing, in the same run (docs/performance.md#running-the-benches).
 */
const PREVIOUS_CHECKOUT = process.env.BENCH_PREVIOUS_GATEWAY || undefined;
const PATH_AND_QUERY = '/v1/pets?limit=20&status=available';

/** Logs, nginx's prefix and Redis's dir; removed after a run that went well or was interrupted. */
const workDir = mkdtempSync(join(tmpdir(), 'gateway-bench-'));

// However the run ends (done, error, Ctrl-C, kill), every process it started is killed, by pid.
const pids = new Set<number>();
const names = new Map<number, string>();
const exited: Promise<unknown>[] = [];
function killAll(): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  pids.clear();
}
process.on('exit', killAll);
let stopping = false;
async function stop(reason: string, code: number): Promise<never> {
  stopping = true;
  process.stderr.write(`\nbench: ${reason}: stopping every process it started\n`);
  await stopAll();
  rmSync(workDir, { recursive: true, force: true });
  process.exit(code);
}
/** SIGTERM to nginx's master first (it stops and reaps its worker), then SIGKILL to everything left. */
let nginxMaster: ChildProcess | undefined;
async function stopAll(): Promise<void> {
  if (nginxMaster !== undefined && nginxMaster.exitCode === null && nginxMaster.signalCode === null) {
    const gone = new Promise((resolve) => nginxMaster!.once('exit', resolve));
    nginxMaster.kill('SIGTERM');
    await Promise.race([gone, sleep(1000)]);
  }
  killAll();
  await reaped();
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(signal, 128 + constants.signals[signal]));
// `npm run` starts this under sh, which does not pass a SIGTERM on: when the parent goes, so does the run.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) void stop('the parent process exited', 1);
}, 500).unref();
/** Waits (2 s at most) for the processes started to be gone, so that no zombie outlives the run. */
async function reaped(): Promise<void> {
  await Promise.race([Promise.all(exited), sleep(2000)]);
}

function track(child: ChildProcess, name?: string): ChildProcess {
  if (child.pid !== undefined) {
    const pid = child.pid;
    pids.add(pid);
    if (name !== undefined) names.set(pid, name);
    exited.push(new Promise((resolve) => child.once('exit', resolve)));
    child.once('exit', () => pids.delete(pid));
  }
  return child;
}

function pinned(cpu: string, command: string, args: string[]): [string, string[]] {
  return process.platform === 'linux' && cpu !== '' ? ['taskset', ['-c', cpu, command, ...args]] : [command, args];
}

/**
 * Output goes to a file, as a container runtime would collect it: the gateway pays for writing its
 * access log, and no reader process competes with the servers for their core.
 */
async function startServer(
  name: string,
  args: string[],
  env: Record<string, string> = {},
  { cpu = SERVER_CPU, cwd = ROOT }: { cpu?: string; cwd?: string } = {},
): Promise<{ port: number; pid: number; adminPort: number | undefined }> {
  const [command, argv] = pinned(cpu, process.execPath, args);
  const logFile = join(workDir, `${name}.log`);
  const log = openSync(logFile, 'a');
  const child = track(spawn(command, argv, { cwd, env: { ...untracedEnv(), ...env }, stdio: ['ignore', log, log] }), `${name}, log in ${logFile}`);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    for (const line of readFileSync(logFile, 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      const parsed = JSON.parse(line) as { port?: number; adminPort?: number; msg?: string };
      // taskset execs the server, so the child's pid is the server's own.
      if (parsed.port !== undefined && (parsed.msg === undefined || parsed.msg === 'gateway listening'))
        return { port: parsed.port, pid: child.pid ?? 0, adminPort: parsed.adminPort };
    }
    await sleep(20);
  }
  throw new Error(`${name} did not start; see ${logFile}`);
}

/**
 * The bench's own environment without OTEL_*: a target traces only when the bench says so (an endpoint
 * exported in the shell would otherwise turn tracing on in every gateway, the "tracing off" one included).
 */
function untracedEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
}

/** The sink's counts so far (bench/otlp-sink.ts). */
async function sinkStats(port: number): Promise<{ exports: number; spans: number; bytes: number; rejected: number }> {
  const response = await fetch(`http://127.0.0.1:${port}/stats`);
  return (await response.json()) as { exports: number; spans: number; bytes: number; rejected: number };
}

/** petstore_gateway_trace_spans_dropped_total from a gateway's admin /metrics (NaN when it cannot be read). */
async function droppedSpans(adminPort: number | undefined): Promise<number> {
  if (adminPort === undefined) return Number.NaN;
  try {
    const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    const match = /^petstore_gateway_trace_spans_dropped_total(?:\{[^}]*\})? (\S+)$/m.exec(text);
    return match ? Number(match[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

async function startRedis(): Promise<{ url: string; pid: number }> {
  const port = await freePort();
  const [command, argv] = pinned(REDIS_CPU, 'redis-server', privateRedisArgs(port, workDir));
  const child = track(spawn(command, argv, { stdio: 'ignore' }), 'redis-server');
  // The offline queue holds the PING until redis-server accepts connections.
  const client = new Redis({ port, retryStrategy: () => 50, maxRetriesPerRequest: null });
  client.on('error', () => {});
  await client.ping();
  client.disconnect();
  return { url: `redis://127.0.0.1:${port}`, pid: child.pid ?? 0 };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin'].filter((dir) => dir !== '');
  return dirs.map((dir) => join(dir, name)).find((file) => existsSync(file));
}

/**
 * nginx as the ceiling a C proxy reaches here: its own process, one worker, a keep-alive upstream pool
 * (without proxy_http_version 1.1 and an empty Connection header it opens a connection per request),
 * no access log. Returns the worker's pid: the process that does the proxying.
 */
async function startNginx(nginx: string, backendPort: number): Promise<{ port: number; pid: number }> {
  const prefix = join(workDir, 'nginx');
  mkdirSync(prefix);
  // The workers run as nobody when nginx starts as root.
  chmodSync(workDir, 0o755);
  chmodSync(prefix, 0o777);
  const port = await freePort();
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
master_process on;
worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  # Node closes no keep-alive connection after N requests; nor does nginx here (its default is 1,000).
  keepalive_requests 1000000;
  upstream b {
    server 127.0.0.1:${backendPort};
    keepalive 64;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://b;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`,
  );
  const [command, argv] = pinned(SERVER_CPU, nginx, ['-p', prefix, '-c', conf, '-e', join(prefix, 'error.log')]);
  const master = track(spawn(command, argv, { stdio: ['ignore', 'ignore', openSync(join(prefix, 'stderr.log'), 'a')] }), 'nginx');
  nginxMaster = master;
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (master.exitCode !== null) break;
    const worker = master.pid === undefined ? undefined : childrenOf(master.pid)[0];
    if (worker !== undefined) {
      pids.add(worker); // a worker whose master is SIGKILLed stays behind
      names.set(worker, `the nginx worker, log in ${prefix}/error.log`);
      return { port, pid: worker };
    }
    await sleep(20);
  }
  throw new Error(`nginx did not start; see ${prefix}/error.log and ${prefix}/stderr.log`);
}

function childrenOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === parent;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** CPU seconds (user + system) a process has used so far, from its own accounting in /proc. */
const CLOCK_TICKS = clockTicks();
function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}
function cpuSeconds(pid: number): number {
  const fields = procFile(pid, 'stat').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

function procFile(pid: number, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    throw new Error(`process ${pid} exited during the run (${names.get(pid) ?? 'a server'}; something else may have stopped it)`);
  }
}

/** Resident memory of a process, in MB (VmRSS, KiB / 1024). */
function rssMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(procFile(pid, 'status'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

interface Target {
  name: string;
  /** Its name in the per-round progress lines. */
  short: string;
  url: string;
  headers: Record<string, string>;
  /** The process whose CPU and memory are the target's own (nginx: its worker). */
  pid: number;
}

/** What bench/wrk/*.lua print in done(): counts, and latencies in microseconds. */
interface WrkReport {
  requests: number;
  durationUs: number;
  skipped?: number;
  non2xx: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

interface Result {
  rps: number;
  /** CPU microseconds the target's server process spent per request served. */
  cpuUsPerRequest: number;
  /** redis-server's CPU microseconds per request in the same run. */
  redisCpuUsPerRequest: number;
  /** The OTLP sink's CPU microseconds per request in the same run. */
  sinkCpuUsPerRequest: number;
  /** Latencies in milliseconds. */
  p50: number;
  p99: number;
  p999: number;
  /** Non-2xx answers, socket errors and timeouts. */
  failed: number;
  /** VmRSS near the end of the run, under load (throughput runs only). */
  rssMb: number;
}

type Mode = { kind: 'throughput'; durationS: number } | { kind: 'paced'; durationS: number };

function wrk(target: Target, mode: Mode): Promise<WrkReport> {
  const headerArgs = Object.entries(target.headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  const load =
    mode.kind === 'throughput'
      ? ['-c', String(CONNECTIONS), '-s', join(WRK_SCRIPTS, 'throughput.lua'), target.url]
      : ['-c', String(PACED_CONNECTIONS), '-s', join(WRK_SCRIPTS, 'paced.lua'), target.url, '--', String(RATE), String(PACED_CONNECTIONS)];
  const [command, argv] = pinned(LOAD_CPU, 'wrk', ['-t1', '-d', `${mode.durationS}s`, '--timeout', '10s', ...headerArgs, ...load]);
  return new Promise((resolve, reject) => {
    const child = execFile(command, argv, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`wrk failed (exit ${error.code ?? error.signal}): ${stderr || stdout}`));
      const line = stdout.split('\n').findLast((candidate) => candidate.startsWith('{'));
      if (line === undefined) return reject(new Error(`wrk printed no report:\n${stdout}\n${stderr}`));
      resolve(JSON.parse(line) as WrkReport);
    });
    track(child);
  });
}

async function measure(
  target: Target,
  mode: Mode,
  side: { redisPid: number; sinkPid: number },
  load: (target: Target, mode: Mode) => Promise<WrkReport>,
): Promise<Result & { report: WrkReport }> {
  const before = cpuSeconds(target.pid);
  const redisBefore = cpuSeconds(side.redisPid);
  const sinkBefore = cpuSeconds(side.sinkPid);
  let rss = Number.NaN;
  // Memory under sustained load: sampled just before the load stops.
  const sampler = setTimeout(() => (rss = rssMb(target.pid)), Math.max(0, mode.durationS * 1000 - 250));
  const report = await load(target, mode).finally(() => clearTimeout(sampler));
  const cpu = cpuSeconds(target.pid) - before;
  const redisCpu = cpuSeconds(side.redisPid) - redisBefore;
  const sinkCpu = cpuSeconds(side.sinkPid) - sinkBefore;
  const served = report.requests;
  return {
    report,
    rps: served / (report.durationUs / 1e6),
    cpuUsPerRequest: served > 0 ? (cpu * 1e6) / served : 0,
    redisCpuUsPerRequest: served > 0 ? (redisCpu * 1e6) / served : 0,
    sinkCpuUsPerRequest: served > 0 ? (sinkCpu * 1e6) / served : 0,
    p50: report.p50 / 1000,
    p99: report.p99 / 1000,
    p999: report.p999 / 1000,
    failed: report.non2xx + report.connect + report.read + report.write + report.timeout,
    rssMb: rss,
  };
}

function median(results: Result[]): Result {
  const middle = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return {
    rps: middle(results.map((result) => result.rps)),
    cpuUsPerRequest: middle(results.map((result) => result.cpuUsPerRequest)),
    redisCpuUsPerRequest: middle(results.map((result) => result.redisCpuUsPerRequest)),
    sinkCpuUsPerRequest: middle(results.map((result) => result.sinkCpuUsPerRequest)),
    p50: middle(results.map((result) => result.p50)),
    p99: middle(results.map((result) => result.p99)),
    p999: middle(results.map((result) => result.p999)),
    failed: results.reduce((sum, result) => sum + result.failed, 0),
    // The last round's sample: the longest the process has been under load.
    rssMb: results.at(-1)!.rssMb,
  };
}

const num = (value: number, digits: number, width: number) => (Number.isFinite(value) ? value.toFixed(digits) : '-').padStart(width);
const NAME_WIDTH = 28;

/** Requests answered 2xx, or a readable error: a key or route that fails would make every figure meaningless. */
async function preflight(target: Target): Promise<void> {
  const response = await fetch(target.url, { headers: target.headers });
  const body = await response.text();
  if (response.status < 200 || response.status > 299) throw new Error(`${target.name} answered ${response.status} to ${target.url}: ${body.slice(0, 300)}`);
}

/** `undefined`: the figure was not measured as the target defines it (a baseline's paced run missed its rate). */
function verdict(pass: boolean | undefined, why = 'off pace'): string {
  if (pass === undefined) return `NOT MEASURED (${why})`;
  return pass ? 'PASS' : 'MISS';
}

let succeeded = false;
try {
  // BENCH_NGINX: the nginx binary to use, or '' to leave nginx out.
  const nginxBinary =
    process.env.BENCH_NGINX !== undefined ? process.env.BENCH_NGINX || undefined : process.platform === 'linux' ? findExecutable('nginx') : undefined;
  buildGateway(); // npm start runs the compiled gateway (dist/): the bench measures what production runs
  const redis = await startRedis();
  const backend = await startServer('backend', ['bench/backend.ts', '0']);
  const backendPort = backend.port;
  const nginx = nginxBinary === undefined ? undefined : await startNginx(nginxBinary, backendPort);
  const bareProxy = await startServer('bare-proxy', ['bench/bare-proxy.ts', `http://127.0.0.1:${backendPort}`, '0']);
  const nodeFloor = await startServer('node-floor', ['bench/node-floor.ts', `http://127.0.0.1:${backendPort}`, '0']);
  // Every feature on includes the signed caller identity: each forwarded request carries a token.
  const identityKeyFile = join(workDir, 'identity-key.pem');
  await writeSigningKeyFile(identityKeyFile, 'ed25519');
  const gatewayEnv = {
    UPSTREAM_IDENTITY_KEY_FILE: identityKeyFile,
    PORT: '0',
    ADMIN_PORT: '0',
    REDIS_URL: redis.url,
    UPSTREAM_URL: `http://127.0.0.1:${backendPort}/v1`,
    GATEWAY_ENVIRONMENT: 'production',
    API_KEY_PEPPER: PEPPER,
    LOG_LEVEL: 'info',
  };
  const gatewayServer = await startServer('gateway', [...START_ARGS], gatewayEnv);
  // The same gateway with rate limits counted in process and synchronised in batches (rateLimit.mode):
  // no Redis round trip on the request path, at the accuracy docs/reference.md states.
  const localFirstServer = await startServer('gateway-local-first', [...START_ARGS], { ...gatewayEnv, RATE_LIMIT_MODE: 'local-first' });
  // The first gateway again, every request traced (always_on: a root sampled whatever the client says) and
  // its SERVER and CLIENT spans exported over OTLP/HTTP, protobuf, with the SDK's batch defaults, to a
  // collector that answers at once.
  const sink = await startServer('otlp-sink', ['bench/otlp-sink.ts', '0'], {}, { cpu: SINK_CPU });
  const tracedServer = await startServer('gateway-traced', [...START_ARGS], {
    ...gatewayEnv,
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_TRACES_SAMPLER: 'always_on',
  });
  if (PREVIOUS_CHECKOUT !== undefined && !existsSync(join(PREVIOUS_CHECKOUT, 'dist/main.js')))
    throw new Error(`BENCH_PREVIOUS_GATEWAY: no dist/main.js in ${PREVIOUS_CHECKOUT} (run npm run build there)`);
  const previousServer =
    PREVIOUS_CHECKOUT === undefined ? undefined : await startServer('gateway-previous', [...START_ARGS], gatewayEnv, { cwd: PREVIOUS_CHECKOUT });
  const adminRedis = new Redis(redis.url);
  const { key } = await new KeyAdmin(adminRedis, { keyPrefix: 'petstore-gateway:', hashKey: createKeyHasher(PEPPER), clock: { now: () => Date.now() } }).create(
    {
      consumer: 'bench',
      environments: ['production'],
      // Limits are counted (Redis work on every request) but never reached.
      rateLimitPerMinute: 1_000_000_000,
    },
  );
  adminRedis.disconnect();

  const floorTarget: Target = {
    name: 'node floor (http + undici)',
    short: 'floor',
    url: `http://127.0.0.1:${nodeFloor.port}${PATH_AND_QUERY}`,
    headers: {},
    pid: nodeFloor.pid,
  };
  const bareTarget: Target = {
    name: 'bare express proxy',
    short: 'bare',
    url: `http://127.0.0.1:${bareProxy.port}${PATH_AND_QUERY}`,
    headers: {},
    pid: bareProxy.pid,
  };
  const gatewayTarget: Target = {
    name: 'gateway (all features)',
    short: 'gateway',
    url: `http://127.0.0.1:${gatewayServer.port}${PATH_AND_QUERY}`,
    headers: { Authorization: `Bearer ${key}` },
    pid: gatewayServer.pid,
  };
  const localFirstTarget: Target = {
    name: 'local-first gateway',
    short: 'local-first',
    url: `http://127.0.0.1:${localFirstServer.port}${PATH_AND_QUERY}`,
    headers: { Authorization: `Bearer ${key}` },
    pid: localFirstServer.pid,
  };
  const tracedTarget: Target = {
    name: 'gateway, tracing 100%',
    short: 'traced',
    url: `http://127.0.0.1:${tracedServer.port}${PATH_AND_QUERY}`,
    headers: { Authorization: `Bearer ${key}` },
    pid: tracedServer.pid,
  };
  const targets: Target[] = [
    { name: 'backend direct', short: 'backend', url: `http://127.0.0.1:${backendPort}${PATH_AND_QUERY}`, headers: {}, pid: backend.pid },
    ...(nginx === undefined
      ? []
      : [{ name: 'nginx (keepalive upstream)', short: 'nginx', url: `http://127.0.0.1:${nginx.port}${PATH_AND_QUERY}`, headers: {}, pid: nginx.pid }]),
    floorTarget,
    bareTarget,
    gatewayTarget,
    localFirstTarget,
    tracedTarget,
    ...(previousServer === undefined
      ? []
      : [
          {
            name: 'gateway, previous build',
            short: 'previous',
            url: `http://127.0.0.1:${previousServer.port}${PATH_AND_QUERY}`,
            headers: { Authorization: `Bearer ${key}` },
            pid: previousServer.pid,
          },
        ]),
  ];
  const FLOOR = targets.indexOf(floorTarget);
  const BARE = targets.indexOf(bareTarget);
  const GATEWAY = targets.indexOf(gatewayTarget);
  const LOCAL_FIRST = targets.indexOf(localFirstTarget);
  const TRACED = targets.indexOf(tracedTarget);
  const PREVIOUS = previousServer === undefined ? undefined : targets.length - 1;
  const side = { redisPid: redis.pid, sinkPid: sink.pid };
  // Every request the traced gateway answers (preflight, warm-ups, measured runs), for spans per request at the end.
  let tracedRequests = 0;
  const load = async (target: Target, mode: Mode) => {
    const report = await wrk(target, mode);
    if (target === tracedTarget) tracedRequests += report.requests;
    return report;
  };
  for (const target of targets) await preflight(target);
  tracedRequests += 1;

  process.stdout.write(
    `GET ${PATH_AND_QUERY}; servers on CPU ${SERVER_CPU}, wrk (1 thread) on CPU ${LOAD_CPU}, redis-server on ${REDIS_CPU === '' ? 'any CPU' : `CPU ${REDIS_CPU}`}; ` +
      `${ROUNDS} round${ROUNDS === 1 ? '' : 's'}, targets in turn, medians\n` +
      `saturating: ${CONNECTIONS} connections, ${DURATION_S} s per run; paced: ${RATE} req/s over ${PACED_CONNECTIONS} connections (bench/wrk/paced.lua), ${DURATION_S} s per run\n` +
      `traced gateway: OTEL_TRACES_SAMPLER=always_on, OTLP/HTTP protobuf to bench/otlp-sink.ts on ${SINK_CPU === '' ? 'any CPU' : `CPU ${SINK_CPU}`}\n`,
  );
  if (nginx === undefined)
    process.stdout.write(
      process.env.BENCH_NGINX === '' ? "nginx left out (BENCH_NGINX='')\n" : 'nginx is not installed: skipped (Debian: apt-get install nginx-light)\n',
    );
  process.stdout.write('\n');

  // Two phases, each with its own warm-up, the same for every target: first the saturating runs, then
  // the paced ones. A paced run right after a saturating one measured that run's aftermath: the overload
  // fills the old generation, and the major GC that collects it landed in the paced run that followed
  // (in 15 of 26 of the gateway's paced periods, against 6 of 19 when paced runs follow paced runs).
  // The paced figures are latencies at a steady 1,000 req/s. A paced request runs alone in its event-loop
  // turn (a batch of one everywhere), which saturating load seldom does: the gateway's first paced period
  // after start promoted 5-10x as much into the old generation as later ones, and without the paced
  // warm-up it was round 1 that paid for it.
  const throughputRuns: Result[][] = targets.map(() => []);
  const pacedRuns: (Result & { report: WrkReport })[][] = targets.map(() => []);
  const firstWord = (target: Target) => target.short;
  for (const target of targets) await load(target, { kind: 'throughput', durationS: WARM_UP_S });
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, target] of targets.entries())
      throughputRuns[index]!.push(await measure(target, { kind: 'throughput', durationS: DURATION_S }, side, load));
    process.stdout.write(
      `round ${round + 1}: ${targets.map((target, index) => `${firstWord(target)} ${throughputRuns[index]!.at(-1)!.rps.toFixed(0)}`).join(', ')} req/s\n`,
    );
  }
  for (const target of targets) await load(target, { kind: 'paced', durationS: PACED_WARM_UP_S });
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, target] of targets.entries()) pacedRuns[index]!.push(await measure(target, { kind: 'paced', durationS: DURATION_S }, side, load));
    process.stdout.write(
      `paced round ${round + 1}: p99 ${targets.map((target, index) => `${firstWord(target)} ${pacedRuns[index]!.at(-1)!.p99.toFixed(2)}`).join(', ')} ms\n`,
    );
  }

  const throughput = throughputRuns.map(median);
  process.stdout.write(
    `\nSaturating (${CONNECTIONS} connections; RSS: sampled under load at the end of the last round)\n` +
      `${'target'.padEnd(NAME_WIDTH)}     req/s  CPU µs/req   p50 ms   p99 ms   RSS MB  failed\n`,
  );
  for (const [index, target] of targets.entries()) {
    const result = throughput[index]!;
    process.stdout.write(
      `${target.name.padEnd(NAME_WIDTH)} ${num(result.rps, 0, 9)} ${num(result.cpuUsPerRequest, 1, 11)} ${num(result.p50, 2, 8)} ${num(result.p99, 2, 8)} ${num(result.rssMb, 0, 8)} ${String(result.failed).padStart(7)}\n`,
    );
  }
  process.stdout.write(
    `(redis-server: ${throughput[GATEWAY]!.redisCpuUsPerRequest.toFixed(1)} CPU µs per gateway request, ${throughput[LOCAL_FIRST]!.redisCpuUsPerRequest.toFixed(1)} per local-first gateway request, ` +
      `${throughput[TRACED]!.redisCpuUsPerRequest.toFixed(1)} per traced gateway request; OTLP sink: ${throughput[TRACED]!.sinkCpuUsPerRequest.toFixed(1)} CPU µs per traced request, not counted in the gateway's)\n`,
  );

  const paced = pacedRuns.map(median);
  const direct = paced[0]!;
  process.stdout.write(`\nPaced at ${RATE} req/s\n${'target'.padEnd(NAME_WIDTH)}     req/s  CPU µs/req   p50 ms   p99 ms  p99.9 ms  added p99  failed\n`);
  for (const [index, target] of targets.entries()) {
    const result = paced[index]!;
    const added = index === 0 ? '-'.padStart(10) : `${result.p99 - direct.p99 >= 0 ? '+' : ''}${(result.p99 - direct.p99).toFixed(2)}`.padStart(10);
    process.stdout.write(
      `${target.name.padEnd(NAME_WIDTH)} ${num(result.rps, 1, 9)} ${num(result.cpuUsPerRequest, 1, 11)} ${num(result.p50, 2, 8)} ${num(result.p99, 2, 8)} ${num(result.p999, 2, 9)} ${added} ${String(result.failed).padStart(7)}\n`,
    );
  }
  // Pacing, checked: the rate each paced run achieved (wrk's requests / its duration), the medians against RATE.
  const within = (rate: number) => rate >= RATE * PACE_TOLERANCE && rate <= RATE / PACE_TOLERANCE;
  const tolerance = `${((1 - PACE_TOLERANCE) * 100).toFixed(0)}%`;
  const kept = paced.every((result) => within(result.rps));
  const offRuns = targets.flatMap((target, index) =>
    pacedRuns[index]!.flatMap((result, round) =>
      within(result.rps) && !result.report.skipped
        ? []
        : [
            `${firstWord(target)} round ${round + 1}: ${result.rps.toFixed(1)} req/s${result.report.skipped ? `, ${result.report.skipped} send slots skipped after a stall` : ''}`,
          ],
    ),
  );
  process.stdout.write(
    `pacing: achieved (median) ${targets.map((target, index) => `${firstWord(target)} ${paced[index]!.rps.toFixed(1)}`).join(', ')} req/s: ` +
      (kept ? `within ${tolerance} of ${RATE}, paced as asked\n` : `NOT within ${tolerance} of ${RATE}: these latencies are for another rate\n`) +
      (offRuns.length === 0 ? `every paced run within ${tolerance}, no send slot skipped\n` : `runs off pace: ${offRuns.join('; ')}\n`),
  );

  const bareT = throughput[BARE]!;
  const line = (label: string, value: string, target: string, pass: boolean | undefined) =>
    `  ${label.padEnd(52)} ${value.padStart(9)}   ${target.padEnd(10)} ${verdict(pass)}\n`;
  const reference = (label: string, value: string) => `  ${label.padEnd(52)} ${value.padStart(9)}   (for reference)\n`;
  /**
   * A gateway target's throughput, CPU per request, added p99 and RSS against a baseline of the same run
   * (the bare proxy: issue 9's targets; the Node floor: issue 29's), and optionally a moonshot CPU ratio.
   */
  const baselineLines = (index: number, baseline: number, name: string, limits: { throughput: number; cpu: number; moonshotCpu?: number }) => {
    const gatewayT = throughput[index]!;
    const baseT = throughput[baseline]!;
    const throughputRatio = gatewayT.rps / baseT.rps;
    const cpuRatio = gatewayT.cpuUsPerRequest / baseT.cpuUsPerRequest;
    const latencyDelta = paced[index]!.p99 - paced[baseline]!.p99;
    return (
      line(`gateway/${name} throughput`, throughputRatio.toFixed(2), `>= ${limits.throughput}`, throughputRatio >= limits.throughput) +
      line(`gateway/${name} CPU per request`, cpuRatio.toFixed(2), `<= ${limits.cpu}`, cpuRatio <= limits.cpu) +
      // The baselines' p99 is a latency at RATE only if their runs kept that rate; a gateway that could
      // not keep it (its own stalls skipped send slots) misses, whatever its p99 says. (Added p99s:
      // each minus the backend's, so their difference is the p99s' difference.)
      line(
        `gateway added p99 - ${name} added p99 at ${RATE} req/s`,
        `${latencyDelta >= 0 ? '+' : ''}${latencyDelta.toFixed(2)} ms`,
        '<= 1 ms',
        within(direct.rps) && within(paced[baseline]!.rps) ? within(paced[index]!.rps) && latencyDelta <= 1 : undefined,
      ) +
      line('gateway RSS under load', `${gatewayT.rssMb.toFixed(0)} MB`, '<= 160 MB', gatewayT.rssMb <= 160) +
      (limits.moonshotCpu === undefined
        ? ''
        : line(`moonshot: gateway/${name} CPU per request`, cpuRatio.toFixed(2), `<= ${limits.moonshotCpu}`, cpuRatio <= limits.moonshotCpu))
    );
  };
  const targetLines = (index: number) => baselineLines(index, BARE, 'bare proxy', { throughput: 0.85, cpu: 1.2 });
  const floorLines = (index: number) => baselineLines(index, FLOOR, 'node floor', { throughput: 0.75, cpu: 1.35, moonshotCpu: 1.15 });
  const floorT = throughput[FLOOR]!;
  process.stdout.write(
    '\nAgainst the Node floor (issue 29), gateway with every feature on (exact rate limits, tracing off)\n' +
      floorLines(GATEWAY) +
      'The same, local-first rate limits\n' +
      floorLines(LOCAL_FIRST) +
      reference('floor/direct throughput', (floorT.rps / throughput[0]!.rps).toFixed(2)) +
      reference('floor/direct CPU per request', (floorT.cpuUsPerRequest / throughput[0]!.cpuUsPerRequest).toFixed(2)),
  );
  process.stdout.write(
    '\nTargets (issue 9), gateway with every feature on (exact rate limits, the default)\n' +
      targetLines(GATEWAY) +
      'The same targets, local-first rate limits (rateLimit.mode: local-first)\n' +
      targetLines(LOCAL_FIRST) +
      `  for reference: bare/direct throughput ${(bareT.rps / throughput[0]!.rps).toFixed(2)}` +
      (nginx === undefined ? '' : `, nginx/direct ${(throughput[1]!.rps / throughput[0]!.rps).toFixed(2)}`) +
      `, gateway/direct ${(throughput[GATEWAY]!.rps / throughput[0]!.rps).toFixed(2)}, local-first gateway/direct ${(throughput[LOCAL_FIRST]!.rps / throughput[0]!.rps).toFixed(2)}\n`,
  );

  // Tracing: what the traced gateway costs over the same gateway with tracing off, and whether it did the
  // whole job (every request's spans delivered: a span the batch processor drops is export work not paid).
  // The batch processor exports a partial batch every 5 s: the tail of the last run arrives after it.
  const expectedSpans = tracedRequests * SPANS_PER_REQUEST;
  let received = await sinkStats(sink.port);
  for (const deadline = Date.now() + 8000; received.spans < expectedSpans && Date.now() < deadline; ) {
    await sleep(250);
    received = await sinkStats(sink.port);
  }
  const dropped = await droppedSpans(tracedServer.adminPort);
  const spansPerRequest = received.spans / tracedRequests;
  const delivered = spansPerRequest >= SPANS_PER_REQUEST * 0.99 && dropped === 0 && received.rejected === 0;
  const offT = throughput[GATEWAY]!;
  const tracedT = throughput[TRACED]!;
  const tracedCpuRatio = tracedT.cpuUsPerRequest / offT.cpuUsPerRequest;
  const tracedAddedP99 = paced[TRACED]!.p99 - paced[GATEWAY]!.p99;
  process.stdout.write(
    '\nTracing: the gateway with every feature on, every request traced (always_on) and exported (OTLP/HTTP protobuf),\n' +
      'against the same gateway with tracing off (no OTEL_* endpoint: trace context propagated, no spans)\n' +
      `  spans received per traced request: ${spansPerRequest.toFixed(3)} (expected ${SPANS_PER_REQUEST}: SERVER, authenticate, rate_limit, its redis wait, CLIENT; ${received.spans} spans in ` +
      `${received.exports} exports, ${(received.bytes / Math.max(1, received.spans)).toFixed(0)} bytes a span, for ${tracedRequests} requests); ` +
      `dropped by the gateway (petstore_gateway_trace_spans_dropped_total): ${Number.isNaN(dropped) ? 'unread' : dropped}` +
      `${received.rejected > 0 ? `; ${received.rejected} exports the sink could not read` : ''}\n` +
      `  ${'tracing 100% / tracing off CPU per request'.padEnd(52)} ${tracedCpuRatio.toFixed(2).padStart(9)}   ${'<= 1.15'.padEnd(10)} ` +
      `${verdict(delivered ? tracedCpuRatio <= 1.15 : undefined, 'spans not all delivered')}\n` +
      reference('tracing 100% / tracing off throughput', (tracedT.rps / offT.rps).toFixed(2)) +
      reference(`tracing 100% / off CPU per request at ${RATE} req/s`, (paced[TRACED]!.cpuUsPerRequest / paced[GATEWAY]!.cpuUsPerRequest).toFixed(2)) +
      reference(`tracing 100% p99 - off p99 at ${RATE} req/s`, `${tracedAddedP99 >= 0 ? '+' : ''}${tracedAddedP99.toFixed(2)} ms`) +
      (PREVIOUS === undefined
        ? '  tracing off / the build before tracing: not measured in this run (BENCH_PREVIOUS_GATEWAY; docs/performance.md#running-the-benches)\n'
        : (() => {
            const previousT = throughput[PREVIOUS]!;
            const offCpuRatio = offT.cpuUsPerRequest / previousT.cpuUsPerRequest;
            return (
              `  ${'tracing off / previous build CPU per request'.padEnd(52)} ${offCpuRatio.toFixed(2).padStart(9)}   ${'<= 1.03'.padEnd(10)} ${verdict(offCpuRatio <= 1.03)}\n` +
              reference('tracing off / previous build throughput', (offT.rps / previousT.rps).toFixed(2))
            );
          })()),
  );

  const failures = [...throughputRuns.flat(), ...pacedRuns.flat()].reduce((sum, result) => sum + result.failed, 0);
  // The run's record: settings, each target's medians and rounds, the ratios the verdicts read. Written
  // whatever the failures (they are in it), so that a run that went wrong can be read too.
  const withoutReport = ({ report: _report, ...result }: Result & { report?: WrkReport }): Result => result;
  const ratio = (index: number, baseline: number) => ({
    throughput: throughput[index]!.rps / throughput[baseline]!.rps,
    cpuPerRequest: throughput[index]!.cpuUsPerRequest / throughput[baseline]!.cpuUsPerRequest,
    addedP99Ms: paced[index]!.p99 - paced[baseline]!.p99,
  });
  const resultsFile = writeRunResults(RESULTS_DIR, RUN_NAME, STARTED, {
    ...ORIGIN,
    request: `GET ${PATH_AND_QUERY}`,
    settings: {
      durationS: DURATION_S,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      pacedRate: RATE,
      pacedConnections: PACED_CONNECTIONS,
      serverCpu: SERVER_CPU,
      loadCpu: LOAD_CPU,
      redisCpu: REDIS_CPU,
      sinkCpu: SINK_CPU,
      nginx: nginx !== undefined,
      previousGateway: PREVIOUS_CHECKOUT !== undefined,
    },
    targets: targets.map((target, index) => ({
      name: target.name,
      saturating: { median: throughput[index]!, rounds: throughputRuns[index]!.map(withoutReport) },
      paced: { median: paced[index]!, rounds: pacedRuns[index]!.map(withoutReport) },
    })),
    ratios: {
      gatewayToFloor: ratio(GATEWAY, FLOOR),
      localFirstToFloor: ratio(LOCAL_FIRST, FLOOR),
      gatewayToBare: ratio(GATEWAY, BARE),
      localFirstToBare: ratio(LOCAL_FIRST, BARE),
      tracedToOff: ratio(TRACED, GATEWAY),
      ...(PREVIOUS === undefined ? {} : { offToPrevious: ratio(GATEWAY, PREVIOUS) }),
    },
    tracing: { spansPerRequest, expectedSpansPerRequest: SPANS_PER_REQUEST, spansDropped: dropped, exportsRejected: received.rejected },
    pacedAsAsked: kept,
    failedRequests: failures,
  });
  process.stdout.write(`\nresults: ${resultsFile}\n`);
  if (failures > 0) {
    const byTarget = targets
      .map((target, index) => ({ name: target.name, failed: throughput[index]!.failed + paced[index]!.failed }))
      .filter((entry) => entry.failed > 0)
      .map((entry) => `${entry.name} ${entry.failed}`)
      .join(', ');
    process.stdout.write(
      `\n${failures} requests failed (non-2xx, socket errors or timeouts: ${byTarget}): the figures above are not comparable. Logs in ${workDir}\n`,
    );
    process.exitCode = 1;
  } else {
    succeeded = true;
  }
} catch (error) {
  if (stopping) await new Promise(() => {}); // stop() ends the process
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\nlogs in ${workDir}\n`);
  process.exitCode = 1;
} finally {
  await stopAll();
  // The logs (the gateway's access log grows by tens of MB a run) are kept only when something went wrong.
  if (succeeded) rmSync(workDir, { recursive: true, force: true });
}
