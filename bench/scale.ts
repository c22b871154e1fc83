// npm run scale -- [--replicas 20] [--clients 500] [--revocations 50] [--cut 5] [--redis standalone|cluster|both]
// Many gateway processes (npm start's entry point) on one private Redis, and on a private Redis Cluster of three
// primaries, driven by many concurrent clients spread over the replicas; what it measures and why is in
// docs/performance.md, "Scale". Everything runs on this machine: the figures are a floor on a bigger one.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { KeyAdmin } from '../src/auth/key-admin.ts';
import { createKeyHasher } from '../src/auth/key-hash.ts';
import { writeSigningKeyFile } from '../src/identity/generate-key.ts';
import { RedisDeprecatedCallStore } from '../src/observability/redis-deprecated-call-store.ts';
import { createRedisClient, type RedisClient, type RedisSettings } from '../src/redis/connect.ts';
import { systemClock } from '../src/time/clock.ts';
import { ADMIN_TOKEN } from '../support/admin-token.ts';
import { startCluster } from '../support/start-cluster.ts';
import { buildGateway, START_ARGS } from '../support/start-gateway-process.ts';
import { privateRedisArgs } from '../support/start-redis.ts';
import { unusedPort } from '../support/start-upstream.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values: flags } = parseArgs({
  options: {
    replicas: { type: 'string', default: '20' },
    clients: { type: 'string', default: '500' },
    revocations: { type: 'string', default: '50' },
    cut: { type: 'string', default: '5' },
    redis: { type: 'string', default: 'both' },
  },
});
const REPLICAS = Number(flags.replicas);
const CLIENTS = Number(flags.clients);
const REVOCATIONS = Number(flags.revocations);
const CUT = Math.min(Number(flags.cut), REPLICAS - 1);
const TOPOLOGIES = flags.redis === 'both' ? ['standalone', 'cluster'] : [flags.redis!];
const PEPPER = 'scale-bench-pepper-0123456789ab';
const PREFIX = 'petstore-gateway:';
const LIST = '/v1/pets?limit=20';
/** local-first's synchronisation interval (the default), set on the fleet: the stated bound is computed with it. */
const SYNC_MS = 250;
const DEPRECATED = '/v1/pets/1';
const workDir = mkdtempSync(join(tmpdir(), 'gateway-scale-'));
const children: ChildProcess[] = [];
/** Synchronous clean-ups for the exit (a Redis Cluster's servers and folder). */
const cleanups: (() => void)[] = [];
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const cleanup of cleanups) cleanup();
  rmSync(workDir, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

const report = (line: string) => process.stdout.write(`${line}\n`);
const median = (values: readonly number[]) => quantile(values, 0.5);
function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
}
const ms = (value: number) => `${value.toFixed(1)} ms`;
/** Answers by status, 0 for a request that got none (a socket error). */
const describe = (statuses: ReadonlyMap<number, number>) =>
  [...statuses]
    .sort(([a], [b]) => a - b)
    .map(([code, count]) => `${code}: ${count}`)
    .join(', ');

function start(name: string, command: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const log = openSync(join(workDir, `${name}.log`), 'a');
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', log, log] });
  children.push(child);
  return child;
}

/** The port a process printed first, in a JSON line of its log. */
async function portsOf(name: string, child: ChildProcess): Promise<{ port: number; adminPort: number }> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(50)) {
    if (child.exitCode !== null) break;
    for (const line of readFileSync(join(workDir, `${name}.log`), 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      const parsed = JSON.parse(line) as { port?: number; adminPort?: number };
      if (parsed.port !== undefined) return { port: parsed.port, adminPort: parsed.adminPort ?? 0 };
    }
  }
  throw new Error(`${name} did not start; see ${join(workDir, `${name}.log`)}`);
}

/**
 * A TCP relay in front of Redis for the replicas whose key-event subscription gets cut: it can make a
 * subscription connection (the one that names itself petstore-gateway-events) drop everything silently, with
 * no reset or close, as a middlebox that lost its state does. Their other connections go on working.
 */
function silentCutRelay(redisPort: number): Promise<{ port: number; cut(): number }> {
  const subscriptions = new Set<{ dead: boolean }>();
  const server = net.createServer((client) => {
    const state = { dead: false, subscription: false };
    const upstream = net.connect(redisPort, '127.0.0.1');
    client.on('data', (chunk) => {
      if (!state.subscription && chunk.includes('petstore-gateway-events')) {
        state.subscription = true;
        subscriptions.add(state);
      }
      if (!state.dead) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!state.dead) client.write(chunk);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      subscriptions.delete(state);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as net.AddressInfo).port,
        cut() {
          for (const state of subscriptions) state.dead = true;
          return subscriptions.size;
        },
      }),
    ),
  );
}

interface Replica {
  name: string;
  child: ChildProcess;
  pool: Pool;
  adminPort: number;
  cut: boolean;
}

interface Fleet {
  replicas: Replica[];
  stop(): Promise<void>;
}

async function startFleet(topology: string, env: NodeJS.ProcessEnv, relayPort: number | undefined): Promise<Fleet> {
  const replicas = await Promise.all(
    Array.from({ length: REPLICAS }, async (_, index) => {
      const name = `${topology}-${env.RATE_LIMIT_MODE}-${index}`;
      const cut = relayPort !== undefined && index < CUT;
      const child = start(name, process.execPath, [...START_ARGS], cut ? { ...env, REDIS_URL: `redis://127.0.0.1:${relayPort}` } : env);
      const { port, adminPort } = await portsOf(name, child);
      const pool = new Pool(`http://127.0.0.1:${port}`, { connections: Math.max(1, Math.ceil(CLIENTS / REPLICAS)), pipelining: 1 });
      return { name, child, pool, adminPort, cut };
    }),
  );
  for (const replica of replicas)
    for (const deadline = Date.now() + 60_000; ; await sleep(100)) {
      const ready = await fetch(`http://127.0.0.1:${replica.adminPort}/readyz`).then(
        (res) => res.status === 200,
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline) throw new Error(`${replica.name} not ready; see its log in ${workDir}`);
    }
  return {
    replicas,
    async stop() {
      await Promise.all(
        replicas.map(async (replica) => {
          await replica.pool.close();
          const exited = new Promise((resolve) => replica.child.once('exit', resolve));
          replica.child.kill('SIGTERM');
          await Promise.race([exited, sleep(10_000)]);
        }),
      );
    },
  };
}

async function status(replica: Replica, path: string, key: string): Promise<number> {
  const res = await replica.pool.request({ method: 'GET', path, headers: { authorization: `Bearer ${key}` } });
  await res.body.dump();
  return res.statusCode;
}

/**
 * `total` requests for `path` from CLIENTS concurrent clients, each bound to one replica (round robin), as
 * fast as they are answered. Statuses counted; per replica, the requests it answered.
 */
async function burst(fleet: Fleet, key: string, total: number, path = LIST, statuses = new Map<number, number>()) {
  const perReplica = fleet.replicas.map(() => 0);
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      const at = client % fleet.replicas.length;
      while (sent < total) {
        sent++;
        const code = await status(fleet.replicas[at]!, path, key).catch(() => 0);
        statuses.set(code, (statuses.get(code) ?? 0) + 1);
        perReplica[at]!++;
      }
    }),
  );
  return { statuses, perReplica, seconds: (performance.now() - started) / 1000 };
}

/**
 * One request per replica, so that each has the key in its cache before a burst (a first lookup waits for
 * Redis, and many at once on a loaded machine can outlast the command timeout: 503, failing closed).
 */
async function warm(fleet: Fleet, key: string): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  for (const replica of fleet.replicas) {
    const code = await status(replica, LIST, key);
    statuses.set(code, (statuses.get(code) ?? 0) + 1);
  }
  return statuses;
}

/** Waits, if needed, so that a burst of about `seconds` fits in one rate-limit window (windows are aligned to the clock). */
async function insideOneWindow(seconds: number, windowMs = 60_000): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < seconds * 1000 + 5000) await sleep(left + 200);
}

async function commandCalls(redisNodes: readonly number[]): Promise<number> {
  let calls = 0;
  for (const port of redisNodes) {
    const client = createRedisClient(settingsFor(`redis://127.0.0.1:${port}`, []), { role: 'tool', name: 'scale-bench-stats' });
    const info = (await client.info('commandstats')) as string;
    for (const match of info.matchAll(/calls=(\d+)/g)) calls += Number(match[1]);
    client.disconnect();
  }
  return calls;
}

function settingsFor(url: string, clusterNodes: { host: string; port: number }[]): RedisSettings {
  return { url, sentinels: [], sentinelName: 'mymaster', clusterNodes, password: null, commandTimeoutMs: 2000, connectTimeoutMs: 2000 };
}

function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) / 1024;
}

/** The time from `revoke` returning until every replica refuses the key: per replica, its first 401 after the revocation. */
async function revocation(fleet: Fleet, admin: KeyAdmin, onlyCut = false): Promise<{ all: number; fromCall: number; probeMs: number }> {
  const { key, record } = await admin.create({ consumer: 'scale-revoked', environments: ['production'], rateLimitPerMinute: 1_000_000 });
  for (const replica of fleet.replicas) if ((await status(replica, LIST, key)) !== 200) throw new Error(`${replica.name} refused a new key`);
  let calledAt = Number.POSITIVE_INFINITY;
  const watched = onlyCut ? fleet.replicas.filter((replica) => replica.cut) : fleet.replicas;
  // Each probe's answer time too: a refusal is seen only when its probe is answered, so under load the
  // figure includes the probe's own wait.
  const probeMs: number[] = [];
  const pollers = Promise.all(
    watched.map(async (replica) => {
      for (const deadline = performance.now() + 30_000; performance.now() < deadline; ) {
        const sentAt = performance.now();
        const code = await status(replica, LIST, key);
        const answeredAt = performance.now();
        probeMs.push(answeredAt - sentAt);
        // A refusal answered before the revocation began would be a defect, not a fast revocation.
        if (code === 401 && answeredAt < calledAt) throw new Error(`${replica.name} refused the key before it was revoked`);
        if (code === 401) return answeredAt;
        if (code !== 200) throw new Error(`${replica.name} answered ${code}`);
      }
      throw new Error(`${replica.name} still accepts a key revoked 30 s ago`);
    }),
  );
  pollers.catch(() => undefined); // awaited below; a probe's failure must not go unhandled meanwhile
  await sleep(20);
  // From revoke's return (the issue's measure: a replica refusing by then counts 0), and from its call
  // (its own round trips to Redis included: an upper bound).
  calledAt = performance.now();
  await admin.revoke(record.id);
  const returnedAt = performance.now();
  const refusedAt = Math.max(...(await pollers));
  return { all: Math.max(0, refusedAt - returnedAt), fromCall: refusedAt - calledAt, probeMs: median(probeMs) };
}

async function adminCall(replica: Replica, method: string, path: string, body?: unknown): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${replica.adminPort}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** The time from the admin API's answer until every replica answers `expected` for the deprecated operation. */
async function brownoutPropagation(fleet: Fleet, key: string, method: 'POST' | 'DELETE', expected: number): Promise<number> {
  let doneAt = Number.POSITIVE_INFINITY;
  const pollers = Promise.all(
    fleet.replicas.map(async (replica) => {
      for (const deadline = performance.now() + 30_000; performance.now() < deadline; ) {
        const code = await status(replica, DEPRECATED, key);
        if (code === expected) return Math.max(0, performance.now() - doneAt);
      }
      throw new Error(`${replica.name} never answered ${expected}`);
    }),
  );
  pollers.catch(() => undefined); // awaited below; a probe's failure must not go unhandled meanwhile
  await sleep(20);
  const code = await adminCall(fleet.replicas[0]!, method, '/brownouts/getPet', method === 'POST' ? { minutes: 10 } : undefined);
  if (code !== (method === 'POST' ? 201 : 204)) throw new Error(`the admin API answered ${code}`);
  doneAt = performance.now();
  return Math.max(...(await pollers));
}

async function measure(topology: string): Promise<void> {
  report(`\n== ${REPLICAS} replicas, ${CLIENTS} clients, Redis ${topology === 'cluster' ? 'Cluster (three primaries)' : 'standalone'}`);
  let redisNodes: number[];
  let gatewayRedis: NodeJS.ProcessEnv;
  let adminRedis: RedisClient;
  let stopRedis: () => Promise<void>;
  if (topology === 'cluster') {
    const cluster = await startCluster();
    redisNodes = cluster.nodes.split(',').map((node) => Number(node.split(':')[1]));
    gatewayRedis = { REDIS_CLUSTER_NODES: cluster.nodes };
    adminRedis = createRedisClient(
      settingsFor(
        '',
        redisNodes.map((port) => ({ host: '127.0.0.1', port })),
      ),
      { role: 'request-path', name: 'scale-bench-admin' },
    );
    stopRedis = cluster.stop;
    cleanups.push(() => void cluster.stop());
  } else {
    const port = await unusedPort();
    const server = start(`redis-${topology}`, 'redis-server', privateRedisArgs(port, workDir), {});
    redisNodes = [port];
    gatewayRedis = { REDIS_URL: `redis://127.0.0.1:${port}` };
    adminRedis = createRedisClient(settingsFor(`redis://127.0.0.1:${port}`, []), { role: 'request-path', name: 'scale-bench-admin' });
    stopRedis = async () => void server.kill('SIGKILL');
  }
  if (adminRedis.status !== 'ready') await new Promise((resolve) => adminRedis.once('ready', resolve));
  try {
    const admin = new KeyAdmin(adminRedis, { keyPrefix: PREFIX, hashKey: createKeyHasher(PEPPER), clock: systemClock });
    const backend = await portsOf(`backend-${topology}`, start(`backend-${topology}`, process.execPath, ['bench/backend.ts', '0'], process.env));
    const identityKeyFile = join(workDir, `identity-key-${topology}.pem`);
    await writeSigningKeyFile(identityKeyFile, 'ed25519');
    const tokens = join(workDir, 'admin-tokens');
    writeFileSync(tokens, `${ADMIN_TOKEN}\n`);
    // Only what the bench sets (and PATH): a REDIS_*, RATE_LIMIT_* or OTEL_* of the shell must not reach the fleet.
    const gatewayEnv = {
      PATH: process.env.PATH,
      ...gatewayRedis,
      UPSTREAM_IDENTITY_KEY_FILE: identityKeyFile,
      ADMIN_API_TOKEN_FILE: tokens,
      PORT: '0',
      ADMIN_PORT: '0',
      UPSTREAM_URL: `http://127.0.0.1:${backend.port}/v1`,
      GATEWAY_ENVIRONMENT: 'production',
      API_KEY_PEPPER: PEPPER,
      LOG_LEVEL: 'info',
      DEPRECATION_REPORT_FLUSH_MS: '1000',
      RATE_LIMIT_WINDOW_MS: '60000',
      RATE_LIMIT_SYNC_MS: String(SYNC_MS),
      SHUTDOWN_DRAIN_DELAY_MS: '0',
    };
    // The silent cut needs the replicas' Redis connections to go through the relay; a cluster client follows
    // the nodes' own addresses, so the cut is measured on the standalone Redis only.
    const relay = topology === 'standalone' && CUT > 0 ? await silentCutRelay(redisNodes[0]!) : undefined;

    const exact = await startFleet(topology, { ...gatewayEnv, RATE_LIMIT_MODE: 'exact' }, relay?.port);
    try {
      // 1. Exact limits: three times a key's limit, all at once.
      const limit = 2000;
      const limited = await admin.create({ consumer: 'scale-limited', environments: ['production'], rateLimitPerMinute: limit });
      await insideOneWindow(15);
      const callsBefore = await commandCalls(redisNodes);
      const exactRun = await burst(exact, limited.key, 3 * limit - REPLICAS, LIST, await warm(exact, limited.key));
      const callsAfter = await commandCalls(redisNodes);
      const admitted = exactRun.statuses.get(200) ?? 0;
      const requests = 3 * limit;
      report(
        `exact: ${requests} requests for a key limited to ${limit} a minute, in ${exactRun.seconds.toFixed(1)} s (${(requests / exactRun.seconds).toFixed(0)} req/s): ` +
          `admitted ${admitted}, over the limit ${Math.max(0, admitted - limit)} (target 0); answers by status ${describe(exactRun.statuses)}`,
      );
      report(`redis: ${((callsAfter - callsBefore) / requests).toFixed(2)} commands a request during the burst (every replica's background checks included)`);

      // 2. Revocation, the fleet otherwise idle, then under the clients' load.
      const idle: number[] = [];
      const idleProbes: number[] = [];
      const idleFromCall: number[] = [];
      for (let round = 0; round < REVOCATIONS; round++) {
        const measured = await revocation(exact, admin);
        idle.push(measured.all);
        idleFromCall.push(measured.fromCall);
        idleProbes.push(measured.probeMs);
      }
      report(
        `revocation, idle fleet (${REVOCATIONS}): until every replica refuses p50 ${ms(median(idle))}, p99 ${ms(quantile(idle, 0.99))}, max ${ms(Math.max(...idle))} (target p99 < 100 ms); from revoke's call p50 ${ms(median(idleFromCall))}, p99 ${ms(quantile(idleFromCall, 0.99))}; a probe's answer took ${ms(median(idleProbes))} (median)`,
      );
      const loadKey = await admin.create({ consumer: 'scale-load', environments: ['production'], rateLimitPerMinute: 100_000_000 });
      const loaded: number[] = [];
      let loading = true;
      const load = (async () => {
        while (loading) await burst(exact, loadKey.key, CLIENTS * 4);
      })();
      const loadedProbes: number[] = [];
      const loadedFromCall: number[] = [];
      for (let round = 0; round < Math.ceil(REVOCATIONS / 5); round++) {
        const measured = await revocation(exact, admin);
        loaded.push(measured.all);
        loadedFromCall.push(measured.fromCall);
        loadedProbes.push(measured.probeMs);
      }
      loading = false;
      await load;
      report(
        `revocation, under ${CLIENTS} clients' load (${loaded.length}): p50 ${ms(median(loaded))}, p99 ${ms(quantile(loaded, 0.99))}, max ${ms(Math.max(...loaded))}; from revoke's call p50 ${ms(median(loadedFromCall))}, p99 ${ms(quantile(loadedFromCall, 0.99))}; a probe's answer took ${ms(median(loadedProbes))} (median)`,
      );

      // 3. Brownouts started and stopped on one replica's admin API, until all answer accordingly.
      const caller = await admin.create({ consumer: 'scale-brownout', environments: ['production'], rateLimitPerMinute: 100_000_000 });
      const starts: number[] = [];
      const stops: number[] = [];
      for (let round = 0; round < 5; round++) {
        starts.push(await brownoutPropagation(exact, caller.key, 'POST', 410));
        stops.push(await brownoutPropagation(exact, caller.key, 'DELETE', 200));
      }
      report(`brownout (5 each): start reaches every replica in max ${ms(Math.max(...starts))}, stop in max ${ms(Math.max(...stops))} (target < 1 s)`);

      // 4. The who-still-calls report, from every replica's counts.
      const callers = await Promise.all(
        [1, 2, 3].map((n) => admin.create({ consumer: `scale-caller-${n}`, environments: ['production'], rateLimitPerMinute: 100_000_000 })),
      );
      const sentByCaller = [1000, 300, 7];
      for (const [index, issued] of callers.entries()) {
        const run = await burst(exact, issued.key, sentByCaller[index]!, DEPRECATED);
        if ((run.statuses.get(200) ?? 0) !== sentByCaller[index]) throw new Error(`deprecated calls refused: ${JSON.stringify([...run.statuses])}`);
      }
      await sleep(2500); // two flushes (DEPRECATION_REPORT_FLUSH_MS above)
      const counts = await new RedisDeprecatedCallStore(adminRedis, PREFIX).read(['getPet']);
      const reported = callers.map((issued) => counts.find((count) => count.keyId === issued.record.id)?.calls ?? 0);
      report(
        `who still calls: sent ${sentByCaller.join(', ')} deprecated calls from three keys over ${REPLICAS} replicas; the report says ${reported.join(', ')}`,
      );

      // 5. Revocation with some replicas' subscriptions cut silently.
      if (relay !== undefined) {
        // Cut again each round: a replica that finds it missed an announcement pings its subscription and,
        // unanswered, reconnects (a new connection, not cut), so each round cuts the one it has then.
        const worst: number[] = [];
        const cut: number[] = [];
        for (let round = 0; round < 5; round++) {
          cut.push(relay.cut());
          worst.push((await revocation(exact, admin, true)).all);
          await sleep(1500); // the ping's timeout and the reconnect
        }
        report(
          `revocation, ${CUT} replicas' key-event subscriptions cut without a reset (${cut.join(', ')} connections) (5): until they refuse median ${ms(median(worst))}, max ${ms(Math.max(...worst))} (target ≤ 2 s)`,
        );
      }

      const rss = exact.replicas.map((replica) => rssMb(replica.child.pid!));
      report(`memory: RSS per replica after the load, median ${median(rss).toFixed(0)} MB, max ${Math.max(...rss).toFixed(0)} MB`);
    } finally {
      await exact.stop();
    }

    // 6. Local-first: the same burst, against the bound it states.
    const localFirst = await startFleet(topology, { ...gatewayEnv, RATE_LIMIT_MODE: 'local-first' }, undefined);
    try {
      const limit = 2000;
      const limited = await admin.create({ consumer: 'scale-local-first', environments: ['production'], rateLimitPerMinute: limit });
      await insideOneWindow(15);
      const run = await burst(localFirst, limited.key, 3 * limit - REPLICAS, LIST, await warm(localFirst, limited.key));
      const admitted = run.statuses.get(200) ?? 0;
      const syncMs = SYNC_MS;
      const perReplicaRate = (3 * limit) / run.seconds / REPLICAS;
      // A replica learns another's hits at its own next synchronisation after the other's: up to two intervals late.
      const bound = (REPLICAS - 1) * perReplicaRate * 2 * (syncMs / 1000);
      report(
        `local-first: ${3 * limit} requests for a key limited to ${limit}, ${((3 * limit) / run.seconds).toFixed(0)} req/s: admitted ${admitted}, over the limit ${Math.max(0, admitted - limit)} (${describe(run.statuses)}); ` +
          `stated bound (N − 1) × rate per replica × 2 × syncMs = ${bound.toFixed(0)}`,
      );
    } finally {
      await localFirst.stop();
    }
  } finally {
    adminRedis.disconnect();
    await stopRedis();
  }
}

buildGateway();
for (const topology of TOPOLOGIES) await measure(topology);
process.exit(0);
