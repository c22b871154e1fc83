// What tracing costs, quickly: the gateway with every feature on, tracing off and traced (always_on, OTLP/HTTP
// protobuf to bench/otlp-sink.ts), saturated by wrk in alternated runs; CPU per request from /proc. The full
// `npm run bench` measures the same pair among other targets; this one is for iterating on the traced path.
//   node bench/tracecost.ts [variant...]   a variant: off | traced, then optionally @<entry> (default dist/main.js)
//                                          and ,NAME=value environment settings of its own,
//                                          e.g. off traced traced@dist-before/main.js traced,OTEL_BSP_MAX_EXPORT_BATCH_SIZE=128
// Reported: each variant's median and its ratio to the first's, and the median of each round's own ratio,
// which with many short rounds (TRACECOST_ROUNDS=30 TRACECOST_DURATION_S=2) resolves what the machine's
// drift hides from a few long ones. The variants take turns at running first in a round, and each round
// starts new processes of them (warmed 6 s): one process of a build can run a tenth above or below another
// for its whole life, so a comparison of one process each measures the pair, not the builds.
// TRACECOST_ROUNDS (default 4), TRACECOST_DURATION_S (default 8), TRACECOST_FRESH=0 (one process per variant
// for every round); TRACECOST_PROFILE=<dir>: the gateways run under --cpu-prof (a profile per process written
// there on exit; the figures are then the profiler's too).
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { KeyAdmin } from '../src/auth/key-admin.ts';
import { createKeyHasher } from '../src/auth/key-hash.ts';
import { writeSigningKeyFile } from '../src/identity/generate-key.ts';
import { buildGateway, START_ARGS, waitUntilReady } from '../test/helpers/start-gateway-process.ts';
import { privateRedisArgs } from '../test/helpers/start-redis.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Number(process.env.TRACECOST_ROUNDS ?? 4);
const DURATION_S = Number(process.env.TRACECOST_DURATION_S ?? 8);
const PROFILE_DIR = process.env.TRACECOST_PROFILE || undefined;
const FRESH = process.env.TRACECOST_FRESH !== '0';
/** Seconds of load before a process is measured: its hot code optimised, its pools and caches filled. */
const WARM_S = Number(process.env.TRACECOST_WARM_S ?? 6);
const PEPPER = 'bench-pepper-0123456789abcdef';
const PATH_AND_QUERY = '/v1/pets?limit=20&status=available';
const workDir = mkdtempSync(join(tmpdir(), 'gateway-tracecost-'));
const children: ChildProcess[] = [];
const killAll = () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
};
process.on('exit', killAll);
process.on('SIGINT', () => process.exit(130));

function start(name: string, command: string, args: string[], env: NodeJS.ProcessEnv, cpu: string): ChildProcess {
  const log = openSync(join(workDir, `${name}.log`), 'a');
  const child = spawn('taskset', ['-c', cpu, command, ...args], { cwd: ROOT, env, stdio: ['ignore', log, log] });
  children.push(child);
  return child;
}

async function portOf(name: string, child: ChildProcess): Promise<{ port: number; adminPort: number | undefined }> {
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(20)) {
    if (child.exitCode !== null) break;
    for (const line of readFileSync(join(workDir, `${name}.log`), 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      const parsed = JSON.parse(line) as { port?: number; adminPort?: number; msg?: string };
      if (parsed.port !== undefined && (parsed.msg === undefined || parsed.msg === 'gateway listening'))
        return { port: parsed.port, adminPort: parsed.adminPort };
    }
  }
  throw new Error(`${name} did not start; see ${join(workDir, `${name}.log`)}`);
}

/** CPU seconds per thread name (the main thread is the process's own name), from /proc/<pid>/task. */
function threadSeconds(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      const name = task === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+$/, '');
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICKS);
    } catch {
      // the thread ended
    }
  }
  return byName;
}

const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

function wrk(url: string, key: string, seconds: number): Promise<number> {
  const args = ['-c', '1', 'wrk', '-t1', '-c50', `-d${seconds}s`, '-H', `Authorization: Bearer ${key}`, '-s', join(ROOT, 'bench/wrk/throughput.lua'), url];
  return new Promise((resolve, reject) =>
    execFile('taskset', args, (error, stdout) => {
      if (error) return reject(error);
      const report = JSON.parse(stdout.split('\n').findLast((line) => line.startsWith('{'))!) as { requests: number; non2xx: number };
      if (report.non2xx > 0) return reject(new Error(`${report.non2xx} non-2xx answers`));
      resolve(report.requests);
    }),
  );
}

const variants = (process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['off', 'traced']).map((spec) => {
  const [head, ...settings] = spec.split(',') as [string, ...string[]];
  const [kind, entry = 'dist/main.js'] = head.split('@') as [string, string?];
  if (kind !== 'off' && kind !== 'traced') throw new Error(`variant ${spec}: off or traced`);
  const extra = Object.fromEntries(settings.map((setting) => [setting.slice(0, setting.indexOf('=')), setting.slice(setting.indexOf('=') + 1)]));
  return { spec, traced: kind === 'traced', entry, extra };
});

try {
  buildGateway();
  const redisPort = 20000 + Math.floor(Math.random() * 20000);
  start('redis', 'redis-server', privateRedisArgs(redisPort, workDir), {}, '1');
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  // The offline queue holds the PING until redis-server accepts connections; the refusals before are expected.
  const admin = new Redis({ port: redisPort, retryStrategy: () => 50, maxRetriesPerRequest: null });
  admin.on('error', () => {});
  await admin.ping();
  const backend = await portOf('backend', start('backend', process.execPath, ['bench/backend.ts', '0'], process.env, '0'));
  const sinkChild = start('sink', process.execPath, ['bench/otlp-sink.ts', '0'], process.env, '1');
  const sink = await portOf('sink', sinkChild);
  const identityKeyFile = join(workDir, 'identity-key.pem');
  await writeSigningKeyFile(identityKeyFile, 'ed25519');
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
  const gatewayEnv = {
    ...env,
    UPSTREAM_IDENTITY_KEY_FILE: identityKeyFile,
    PORT: '0',
    ADMIN_PORT: '0',
    REDIS_URL: redisUrl,
    UPSTREAM_URL: `http://127.0.0.1:${backend.port}/v1`,
    GATEWAY_ENVIRONMENT: 'production',
    API_KEY_PEPPER: PEPPER,
    LOG_LEVEL: 'info',
    SHUTDOWN_DRAIN_DELAY_MS: '0',
  };
  const { key } = await new KeyAdmin(admin, { keyPrefix: 'petstore-gateway:', hashKey: createKeyHasher(PEPPER), clock: { now: () => Date.now() } }).create({
    consumer: 'bench',
    environments: ['production'],
    rateLimitPerMinute: 1_000_000_000,
  });
  admin.disconnect();
  const flags = START_ARGS.slice(0, -1);
  /** One process of a variant, started and warmed; `generation` names its log and profile apart from earlier ones. */
  async function launch(variant: (typeof variants)[number], index: number, generation: number) {
    const name = `gateway-${index}-${generation}`;
    const profile = PROFILE_DIR !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${name}.cpuprofile`] : [];
    const child = start(
      name,
      process.execPath,
      [...profile, ...flags, variant.entry],
      variant.traced
        ? {
            ...gatewayEnv,
            OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.port}/`,
            OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
            OTEL_TRACES_SAMPLER: 'always_on',
            ...variant.extra,
          }
        : { ...gatewayEnv, ...variant.extra },
      '0',
    );
    const { port, adminPort } = await portOf(name, child);
    // Listening comes before the Redis connections: a request before readiness is refused (503).
    await waitUntilReady({ adminPort: adminPort! });
    const url = `http://127.0.0.1:${port}${PATH_AND_QUERY}`;
    await wrk(url, key, WARM_S);
    // What the load left to V8's background threads (compiling, sweeping) finishes before any measuring.
    await sleep(1000);
    return { child, url };
  }
  /** Stops processes in order (SIGTERM: the gateway drains and exits, and --cpu-prof writes its profile). */
  async function stop(children: ChildProcess[]): Promise<void> {
    const exits = children.map((child) => new Promise((resolve) => child.once('exit', resolve)));
    for (const child of children) child.kill('SIGTERM');
    await Promise.race([Promise.all(exits), sleep(15_000)]);
  }
  const gateways = variants.map((variant) => ({
    ...variant,
    runs: [] as number[],
    /** The share of its core each run used: under 1, the load generator (not the gateway) set the pace. */
    coreShares: [] as number[],
    threads: new Map<string, number>(),
    requests: 0,
  }));
  let running = FRESH ? [] : await Promise.all(variants.map((variant, index) => launch(variant, index, 0)));
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts with the next variant in turn, so that no variant always runs first. Two processes of
    // one build differ by up to a tenth for as long as they run (what each one's JIT made of the code), so by
    // default every round starts new processes: the median of many rounds' ratios is then one of many pairs
    // of processes, not of one pair (TRACECOST_FRESH=0 keeps one process per variant for every round).
    if (FRESH) {
      running = [];
      for (const [index, variant] of variants.entries()) running.push(await launch(variant, index, round));
    }
    const inTurn = [...gateways.keys()].map((at) => (at + round) % gateways.length);
    for (const at of inTurn) {
      const gateway = gateways[at]!;
      const { child, url } = running[at]!;
      const before = cpuSeconds(child.pid!);
      const threadsBefore = threadSeconds(child.pid!);
      const requests = await wrk(url, key, DURATION_S);
      const used = cpuSeconds(child.pid!) - before;
      gateway.runs.push((used * 1e6) / requests);
      gateway.coreShares.push(used / DURATION_S);
      for (const [name, seconds] of threadSeconds(child.pid!))
        gateway.threads.set(name, (gateway.threads.get(name) ?? 0) + seconds - (threadsBefore.get(name) ?? 0));
      gateway.requests += requests;
    }
    if (FRESH) await stop(running.map(({ child }) => child));
    process.stdout.write(`round ${round + 1}: ${gateways.map((gateway) => `${gateway.spec} ${gateway.runs.at(-1)!.toFixed(1)}`).join(', ')} CPU µs/req\n`);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const base = median(gateways[0]!.runs);
  // Each round's own ratio to the first variant, then their median: the machine's drift between rounds
  // (other tenants, CPU steal) moves both sides of a round's ratio alike, so many short rounds resolve
  // what a ratio of medians over a few long ones cannot.
  const firstRuns: number[] = gateways[0]!.runs;
  const ratios = (runs: number[]) => runs.map((run, round) => run / firstRuns[round]!).sort((a, b) => a - b);
  const paired = (runs: number[]) => median(ratios(runs));
  /** The middle half of the rounds' ratios: how far one round's pair of processes can be trusted. */
  const middleHalf = (runs: number[]) => {
    const sorted = ratios(runs);
    return `${sorted[Math.floor((sorted.length - 1) / 4)]!.toFixed(2)}-${sorted[Math.ceil(((sorted.length - 1) * 3) / 4)]!.toFixed(2)}`;
  };
  for (const gateway of gateways)
    process.stdout.write(
      `${gateway.spec.padEnd(32)} median ${median(gateway.runs).toFixed(1)} µs/req, ×${(median(gateway.runs) / base).toFixed(2)}; median of rounds' ratios ×${paired(gateway.runs).toFixed(2)} (middle half ${middleHalf(gateway.runs)}); ${median(gateway.coreShares).toFixed(2)} of its core\n`,
    );
  for (const gateway of gateways)
    process.stdout.write(
      `${gateway.spec.padEnd(32)} by thread, µs/req: ${[...gateway.threads]
        .filter(([, seconds]) => seconds > 0)
        .map(([name, seconds]) => `${name} ${((seconds * 1e6) / gateway.requests).toFixed(1)}`)
        .join(', ')}\n`,
    );
  const stats = (await (await fetch(`http://127.0.0.1:${sink.port}/stats`)).json()) as { spans: number; exports: number };
  process.stdout.write(`sink so far: ${stats.spans} spans in ${stats.exports} exports\n`);
  if (!FRESH) await stop(running.map(({ child }) => child));
} finally {
  killAll();
  rmSync(workDir, { recursive: true, force: true });
}
