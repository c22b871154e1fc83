// Gateways to compare, and what they run against: a private redis-server, the bench backend, the OTLP sink
// and one API key, started as `npm run bench` starts them. Shared by bench/tracecost.ts (CPU time) and
// bench/instructions.ts (instructions counted under callgrind).
//   a variant: off | traced | floor, then optionally @<entry> (default dist/main.js) and ,NAME=value environment
//   settings of its own, e.g. off traced traced@dist-before/main.js traced,OTEL_BSP_MAX_EXPORT_BATCH_SIZE=128;
//   `shadow` is `off` with SHADOW_SAMPLE=0.01 (shadow traffic to the same backend as staging); `floor` is the Node floor (bench/node-floor.ts, as `npm run bench` runs it) in front of the same backend;
//   `fastify` and `fast-gateway` are the peers (bench/peers/): other Node gateways doing the same job (the key looked up
//   in the same Redis, a per-key limit counted there, metrics, an access line to a file), installed on first use;
//   the setting BENCH_KEY=quota makes the variant's requests carry a key with a daily and a monthly quota;
//   BENCH_TLS=1 puts the variant behind TLS on both legs: an HTTPS listener (TLS_CERT_FILE, TLS_KEY_FILE) and mutual
//   TLS to a second backend that demands a client certificate (UPSTREAM_TLS_CA_FILE, _CERT_FILE, _KEY_FILE), with
//   certificates bench/certificates.ts makes for the run; the floor reads the same settings (bench/node-floor.ts).
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { type BenchPki, createBenchPki } from './certificates.ts';
import { KeyAdmin } from '../src/auth/key-admin.ts';
import { createKeyHasher } from '../src/auth/key-hash.ts';
import { writeSigningKeyFile } from '../src/identity/generate-key.ts';
import { buildGateway, START_ARGS, waitUntilReady } from '../support/start-gateway-process.ts';
import { privateRedisArgs } from '../support/start-redis.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PEPPER = 'bench-pepper-0123456789abcdef';
const KEY_PREFIX = 'petstore-gateway:';
/** What every request asks; BENCH_TARGET changes it (e.g. /v1/pets?limit=100, with BENCH_BACKEND_PETS=100: bench/backend.ts). */
const PATH_AND_QUERY = process.env.BENCH_TARGET ?? '/v1/pets?limit=20&status=available';

export interface Variant {
  /** As given on the command line. */
  spec: string;
  traced: boolean;
  /** The Node floor, not a gateway: no key, no features, the same backend. */
  floor: boolean;
  /** A peer (bench/peers/), not this gateway: the same job in another stack. */
  peer: boolean;
  /** HTTPS listener and mutual TLS to the backend (the setting BENCH_TLS=1). */
  tls: boolean;
  entry: string;
  /** Environment settings of its own. */
  extra: Record<string, string>;
}

/** The peers, each a server in bench/peers/ named after its kind. */
export const PEERS = ['fastify', 'fast-gateway'] as const;
const VARIANT_KINDS: readonly string[] = ['off', 'traced', 'floor', 'shadow', ...PEERS];

export function parseVariants(specs: readonly string[]): Variant[] {
  return (specs.length > 0 ? specs : ['off', 'traced']).map((spec) => {
    const [head, ...settings] = spec.split(',') as [string, ...string[]];
    const [kind, entry = 'dist/main.js'] = head.split('@') as [string, string?];
    if (!VARIANT_KINDS.includes(kind)) throw new Error(`variant ${spec}: ${VARIANT_KINDS.join(', ')}`);
    const peer = (PEERS as readonly string[]).includes(kind);
    const own = Object.fromEntries(settings.map((setting) => [setting.slice(0, setting.indexOf('=')), setting.slice(setting.indexOf('=') + 1)]));
    // `shadow`: `off` with 1% of requests shadowed to the same backend (SHADOW_UPSTREAM_URL below); `,SHADOW_SAMPLE=` changes the share.
    const extra = kind === 'shadow' ? { SHADOW_SAMPLE: '0.01', ...own } : own;
    return {
      spec,
      traced: kind === 'traced',
      floor: kind === 'floor',
      peer,
      tls: extra.BENCH_TLS === '1',
      entry: kind === 'floor' ? 'bench/node-floor.ts' : peer ? `bench/peers/${kind}.mjs` : entry,
      extra,
    };
  });
}

/** A gateway process of a variant, ready and warmed. */
export interface RunningVariant {
  child: ChildProcess;
  url: string;
  /** The backend it proxies to (the mTLS one for a TLS variant), for its CPU per request. */
  backendPid: number;
  /** The gateway's admin listener (its /metrics); undefined for the floor and the peers. */
  adminPort?: number;
}

export interface LaunchOptions {
  /** Names its log (and a profile or a callgrind file) apart from the other processes'. */
  name: string;
  cpu: string;
  /** Node's flags before `npm start`'s (a profiler's). */
  nodeFlags?: readonly string[];
  /** A command the process runs under, with its arguments (valgrind). */
  wrapper?: readonly string[];
  /** How long it may take to listen. */
  startMs?: number;
  /** Seconds of load before it is measured: its hot code optimised, its pools and caches filled. */
  warmS: number;
  connections?: number;
  /** How long wrk waits for an answer during the warm-up (see `wrk`). */
  wrkTimeoutS?: number;
  /**
   * Errors in the warm-up are not figures (callgrind: a gateway's first minutes are slow enough for its Redis
   * commands to time out, 503); any other error still fails the launch.
   */
  warmUpErrorsAllowed?: boolean;
}

export interface Bench {
  workDir: string;
  /** The API key every request carries. */
  key: string;
  /** The key a variant's requests carry: `key`, or one with quotas under BENCH_KEY=quota. */
  keyFor(variant: Variant): string;
  sinkPort: number;
  /** The certificates of the TLS variants, made when the first one is launched. */
  pki(): BenchPki;
  /** The mTLS backend's count of TLS connections accepted (by protocol and cipher) and requests served; undefined before a TLS variant ran. */
  tlsBackendStats(): Promise<{ requests: number; connections: Record<string, number> } | undefined>;
  launch(variant: Variant, options: LaunchOptions): Promise<RunningVariant>;
  /** Stops processes (SIGTERM: the gateway drains and exits, and --cpu-prof writes its profile). */
  stop(children: readonly ChildProcess[], waitMs?: number): Promise<void>;
  /**
   * Commands the bench's redis-server has run so far (INFO commandstats): `sent`, as clients sent them (a script
   * counts once, the commands it calls not at all), and `run`, every command, those the scripts call included.
   */
  redisCommands(): Promise<{ sent: number; run: number }>;
  /** Kills what is still running and removes the work directory. */
  close(): void;
}

/** A run answered with errors (non-2xx): its figures are not those of the path being measured. */
export class FailedAnswers extends Error {}

/**
 * Requests answered by a `wrk -t1` run of `seconds` pinned to CPU 1; any non-2xx answer fails it, and so does a
 * connection refused (for a TLS variant: a handshake that failed).
 * `timeoutS`: how long wrk waits for an answer (its default, 2 s, is shorter than a request takes under
 * callgrind on a loaded machine: every request would time out and the round count none).
 */
export function wrk(url: string, key: string, seconds: number, connections = 50, timeoutS = 2): Promise<number> {
  const args = [
    '-c',
    '1',
    'wrk',
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    `--timeout`,
    `${timeoutS}s`,
    '-H',
    `Authorization: Bearer ${key}`,
    '-s',
    join(ROOT, 'bench/wrk/throughput.lua'),
    url,
  ];
  return new Promise((resolve, reject) =>
    execFile('taskset', args, (error, stdout) => {
      if (error) return reject(error);
      const report = JSON.parse(stdout.split('\n').findLast((line) => line.startsWith('{'))!) as { requests: number; non2xx: number; connect: number };
      if (report.non2xx > 0) return reject(new FailedAnswers(`${report.non2xx} non-2xx answers`));
      if (report.connect > 0 || report.requests === 0)
        return reject(new Error(`${report.connect} connections failed, ${report.requests} requests answered (${url})`));
      resolve(report.requests);
    }),
  );
}

/** The peers' own dependencies (bench/peers/package.json), installed once, never with the gateway's. */
function installPeers(): void {
  if (existsSync(join(ROOT, 'bench/peers/node_modules'))) return;
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--prefix', join(ROOT, 'bench/peers')], { stdio: 'inherit' });
}

/** One plain request: its status. */
function statusOf(url: string, key: string | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    httpGet(url, { agent: false, headers: key === undefined ? {} : { authorization: `Bearer ${key}` } }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    }).on('error', reject);
  });
}

/**
 * Whether a target does the job before it is measured: 200 with the key, 401 without one, and 429 for the second call
 * of a key limited to one a minute. A target that skipped a part of the job would be measured doing less.
 */
async function checkTheJob(url: string, key: string, limitedKey: string, spec: string): Promise<void> {
  const seen = [await statusOf(url, key), await statusOf(url, undefined), await statusOf(url, limitedKey), await statusOf(url, limitedKey)];
  if (seen.join() !== '200,401,200,429') throw new Error(`${spec} does not do the job: ${seen.join(', ')} (want 200, 401, 200, 429)`);
}

/** The warm-up's load (see LaunchOptions.warmUpErrorsAllowed). */
async function warmUp(url: string, key: string, options: LaunchOptions): Promise<void> {
  try {
    await wrk(url, key, options.warmS, options.connections, options.wrkTimeoutS);
  } catch (error) {
    if (!(options.warmUpErrorsAllowed && error instanceof FailedAnswers)) throw error;
  }
}

/** Builds dist/, then starts redis-server, the backend and the sink, and makes the key. */
export async function startBench(): Promise<Bench> {
  const workDir = mkdtempSync(join(tmpdir(), 'gateway-variants-'));
  const children: ChildProcess[] = [];
  const killAll = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', killAll);
  // Killed or interrupted, the bench takes its gateways, backend and Redis with it (`exit` runs killAll).
  process.on('SIGINT', () => process.exit(130));
  process.on('SIGTERM', () => process.exit(143));

  function start(name: string, command: string, args: readonly string[], env: NodeJS.ProcessEnv, cpu: string): ChildProcess {
    const log = openSync(join(workDir, `${name}.log`), 'a');
    const child = spawn('taskset', ['-c', cpu, command, ...args], { cwd: ROOT, env, stdio: ['ignore', log, log] });
    children.push(child);
    return child;
  }

  async function portOf(name: string, child: ChildProcess, waitMs = 15_000): Promise<{ port: number; adminPort: number | undefined }> {
    for (const deadline = Date.now() + waitMs; Date.now() < deadline; await sleep(20)) {
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

  try {
    buildGateway();
    const redisPort = 20000 + Math.floor(Math.random() * 20000);
    start('redis', 'redis-server', privateRedisArgs(redisPort, workDir), {}, '1');
    // The offline queue holds the PING until redis-server accepts connections; the refusals before are expected.
    const admin = new Redis({ port: redisPort, retryStrategy: () => 50, maxRetriesPerRequest: null });
    admin.on('error', () => {});
    await admin.ping();
    const backendChild = start('backend', process.execPath, ['bench/backend.ts', '0'], process.env, '0');
    const backend = await portOf('backend', backendChild);
    const sink = await portOf('sink', start('sink', process.execPath, ['bench/otlp-sink.ts', '0'], process.env, '1'));
    const identityKeyFile = join(workDir, 'identity-key.pem');
    await writeSigningKeyFile(identityKeyFile, 'ed25519');
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
    const gatewayEnv = {
      ...env,
      UPSTREAM_IDENTITY_KEY_FILE: identityKeyFile,
      PORT: '0',
      ADMIN_PORT: '0',
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      UPSTREAM_URL: `http://127.0.0.1:${backend.port}/v1`,
      // Staging for the `shadow` variant: the same backend (unused while SHADOW_SAMPLE is 0).
      SHADOW_UPSTREAM_URL: `http://127.0.0.1:${backend.port}/v1`,
      GATEWAY_ENVIRONMENT: 'production',
      API_KEY_PEPPER: PEPPER,
      LOG_LEVEL: 'info',
      SHUTDOWN_DRAIN_DELAY_MS: '0',
    };
    const keys = new KeyAdmin(admin, { keyPrefix: KEY_PREFIX, hashKey: createKeyHasher(PEPPER), clock: { now: () => Date.now() } });
    const { key } = await keys.create({ consumer: 'bench', environments: ['production'], rateLimitPerMinute: 1_000_000_000 });
    // Quotas no run reaches: the cost of counting them, never a refusal.
    const quota = 1_000_000_000_000;
    const { key: quotaKey } = await keys.create({
      consumer: 'bench-quota',
      environments: ['production'],
      rateLimitPerMinute: 1_000_000_000,
      quotaPerDay: quota,
      quotaPerMonth: quota,
    });
    const keyFor = (variant: Variant) => (variant.extra.BENCH_KEY === 'quota' ? quotaKey : key);
    // One call a minute, a key a target (targets share the Redis the limits are counted in): each must refuse its second.
    const limitedKey = async () => (await keys.create({ consumer: 'bench-limited', environments: ['production'], rateLimitPerMinute: 1 })).key;
    const flags = START_ARGS.slice(0, -1);

    // TLS on both legs, started with the first TLS variant: the certificates, then the store over mTLS.
    let pki: BenchPki | undefined;
    let tlsBackend: { port: number; pid: number } | undefined;
    const makePki = () => {
      if (pki === undefined) {
        const dir = join(workDir, 'pki');
        mkdirSync(dir);
        pki = createBenchPki(dir);
      }
      return pki;
    };
    const startTlsBackend = async () => {
      if (tlsBackend === undefined) {
        const { caFile, serverCertFile, serverKeyFile } = makePki();
        const backendEnv = {
          ...process.env,
          BENCH_BACKEND_TLS_CERT_FILE: serverCertFile,
          BENCH_BACKEND_TLS_KEY_FILE: serverKeyFile,
          BENCH_BACKEND_TLS_CA_FILE: caFile,
        };
        const child = start('backend-tls', process.execPath, ['bench/backend.ts', '0'], backendEnv, '0');
        tlsBackend = { port: (await portOf('backend-tls', child)).port, pid: child.pid! };
      }
      return tlsBackend;
    };
    /** The settings that put a process behind TLS on both legs, the gateway's names (the floor reads them too), and its upstream. */
    const tlsSettings = async (variant: Variant) => {
      if (!variant.tls) return { env: {}, scheme: 'http', upstream: `http://127.0.0.1:${backend.port}`, backendPid: backendChild.pid! };
      const { caFile, serverCertFile, serverKeyFile, clientCertFile, clientKeyFile } = makePki();
      const { port, pid } = await startTlsBackend();
      return {
        env: {
          TLS_CERT_FILE: serverCertFile,
          TLS_KEY_FILE: serverKeyFile,
          UPSTREAM_TLS_CA_FILE: caFile,
          UPSTREAM_TLS_CERT_FILE: clientCertFile,
          UPSTREAM_TLS_KEY_FILE: clientKeyFile,
        },
        scheme: 'https',
        upstream: `https://127.0.0.1:${port}`,
        backendPid: pid,
      };
    };

    return {
      workDir,
      key,
      keyFor,
      sinkPort: sink.port,
      pki: makePki,
      async tlsBackendStats() {
        if (tlsBackend === undefined || pki === undefined) return undefined;
        const { port } = tlsBackend;
        const { caFile, clientCertFile, clientKeyFile } = pki;
        return new Promise((resolve, reject) => {
          const options = { ca: readFileSync(caFile), cert: readFileSync(clientCertFile), key: readFileSync(clientKeyFile), agent: false as const };
          httpsGet(`https://127.0.0.1:${port}/bench-stats`, options, (response) => {
            let body = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => (body += chunk));
            response.on('end', () => resolve(JSON.parse(body) as { requests: number; connections: Record<string, number> }));
          }).on('error', reject);
        });
      },
      async redisCommands() {
        const calls = new Map([...(await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((match) => [match[1]!, Number(match[2])]));
        const run = [...calls.values()].reduce((sum, count) => sum + count, 0);
        // What the gateway's scripts call. It sends none of them itself but PEXPIRE, in the usage flush's MULTI (a
        // few an interval, counted out with the scripts' own).
        const fromScripts = ['incrby', 'pttl', 'get', 'pexpire'].reduce((sum, name) => sum + (calls.get(name) ?? 0), 0);
        return { sent: run - fromScripts, run };
      },
      async launch(variant, options) {
        if (variant.peer) {
          if (variant.tls) throw new Error(`variant ${variant.spec}: the peers run plain only`);
          installPeers();
          const peerEnv = {
            ...process.env,
            PEER_PORT: '0',
            UPSTREAM_ORIGIN: `http://127.0.0.1:${backend.port}`,
            REDIS_URL: gatewayEnv.REDIS_URL,
            API_KEY_PEPPER: PEPPER,
            KEY_PREFIX: KEY_PREFIX,
            ACCESS_LOG: join(workDir, `${options.name}-access.log`),
            ...variant.extra,
          };
          // The gateway's V8 flags too: what is compared is the code, not the flags.
          const node = [process.execPath, ...(options.nodeFlags ?? []), ...flags, variant.entry];
          const [command, ...args] = [...(options.wrapper ?? []), ...node] as [string, ...string[]];
          const child = start(options.name, command, args, peerEnv, options.cpu);
          const { port } = await portOf(options.name, child, options.startMs);
          const url = `http://127.0.0.1:${port}${PATH_AND_QUERY}`;
          await checkTheJob(url, keyFor(variant), await limitedKey(), variant.spec);
          await warmUp(url, keyFor(variant), options);
          await sleep(1000);
          return { child, url, backendPid: backendChild.pid! };
        }
        const tls = await tlsSettings(variant);
        if (variant.floor) {
          const node = [process.execPath, ...(options.nodeFlags ?? []), variant.entry, tls.upstream, '0'];
          const [command, ...args] = [...(options.wrapper ?? []), ...node] as [string, ...string[]];
          const child = start(options.name, command, args, { ...process.env, ...tls.env, ...variant.extra }, options.cpu);
          const { port } = await portOf(options.name, child, options.startMs);
          const url = `${tls.scheme}://127.0.0.1:${port}${PATH_AND_QUERY}`;
          await warmUp(url, keyFor(variant), options);
          await sleep(1000);
          return { child, url, backendPid: tls.backendPid };
        }
        const tlsGatewayEnv = variant.tls ? { ...gatewayEnv, ...tls.env, UPSTREAM_URL: `${tls.upstream}/v1` } : gatewayEnv;
        const variantEnv = variant.traced
          ? {
              ...tlsGatewayEnv,
              OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.port}/`,
              OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
              OTEL_TRACES_SAMPLER: 'always_on',
              ...variant.extra,
            }
          : { ...tlsGatewayEnv, ...variant.extra };
        const node = [process.execPath, ...(options.nodeFlags ?? []), ...flags, variant.entry];
        const [command, ...args] = [...(options.wrapper ?? []), ...node] as [string, ...string[]];
        const child = start(options.name, command, args, variantEnv, options.cpu);
        const { port, adminPort } = await portOf(options.name, child, options.startMs);
        // Listening comes before the Redis connections: a request before readiness is refused (503).
        await waitUntilReady({ adminPort: adminPort! }, options.startMs);
        const url = `${tls.scheme}://127.0.0.1:${port}${PATH_AND_QUERY}`;
        if (!variant.tls) await checkTheJob(url, keyFor(variant), await limitedKey(), variant.spec);
        await warmUp(url, keyFor(variant), options);
        // What the load left to V8's background threads (compiling, sweeping) finishes before any measuring.
        await sleep(1000);
        return { child, url, backendPid: tls.backendPid, adminPort: adminPort! };
      },
      async stop(stopping, waitMs = 15_000) {
        const exits = stopping.map((child) => new Promise((resolve) => child.once('exit', resolve)));
        for (const child of stopping) child.kill('SIGTERM');
        // Unreferenced: once every child has exited the wait holds nothing, so the bench exits when it is done.
        await Promise.race([Promise.all(exits), sleep(waitMs, undefined, { ref: false })]);
      },
      close() {
        admin.disconnect();
        killAll();
        rmSync(workDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    killAll();
    rmSync(workDir, { recursive: true, force: true });
    throw error;
  }
}
