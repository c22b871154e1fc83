// The scale against a gateway process: 1,000 never-reading small-window connections pipelining the document beside a keyed
// client, and 260 never-reading /metrics pullers beside the probes.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { KeyAdmin } from '../../src/auth/key-admin.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import { systemClock } from '../../src/time/clock.ts';
import { PROJECT_ROOT } from '../../support/start-gateway-process.ts';
import { type Replicas, startReplicas } from '../../support/start-replicas.ts';
import { scaled } from '../../support/time-scale.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';

/** As the issue: 1,000 connections with a 4 KB receive window and MSS 536, each pipelining 16 document requests (listen.maxQueuedPerConnection). */
const HOSTILE = 1000;
const PIPELINED = 16;
const RCVBUF = 4096;
/** Short, so the send timeout fires within the test; production's default is 30 s. */
const SEND_TIMEOUT_MS = 8000;
/** What the keyed client may wait for each answer: the 2 s. */
const PATIENCE_MS = 2000;
const PEPPER = 'never-reading-flood-pepper-01';

let started: Replicas | undefined;
let dir: string | undefined;
let key: string;
const floods: ChildProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'never-reading-flood-'));
  const config = parseYaml(await readFile(join(PROJECT_ROOT, 'config/gateway.yaml'), 'utf8')) as { listen: Record<string, unknown> };
  const configFile = join(dir, 'gateway.yaml');
  await writeFile(
    configFile,
    stringifyYaml({ ...config, contract: join(PROJECT_ROOT, 'config/petstore.openapi.yaml'), listen: { ...config.listen, sendTimeoutMs: SEND_TIMEOUT_MS } }),
  );
  started = await startReplicas(1, { API_KEY_PEPPER: PEPPER, GATEWAY_CONFIG: configFile });
  const admin = new KeyAdmin(started.redis.client, { keyPrefix: 'petstore-gateway:', hashKey: createKeyHasher(PEPPER), clock: systemClock });
  key = (await admin.create({ consumer: 'well-behaved', environments: ['production'] })).key;
});
afterEach(async () => {
  for (const flood of floods.splice(0)) {
    if (flood.exitCode !== null || flood.signalCode !== null) continue;
    const exited = once(flood, 'exit');
    flood.kill('SIGKILL');
    await exited;
  }
});
afterAll(async () => {
  await started?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function metrics(adminPort: number): Promise<Map<string, number>> {
  return parseExposition(await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text());
}

/** `connections` small-window clients (test/helpers/small-window-clients.py) sending `bytes` each and never reading; resolves at once. */
function smallWindowFlood(port: number, connections: number, bytes: string): { ready: Promise<number> } {
  const started = performance.now();
  const child = spawn('python3', [join(PROJECT_ROOT, 'test/helpers/small-window-clients.py'), '127.0.0.1', String(port), String(connections), String(RCVBUF)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  floods.push(child);
  child.stdin.end(bytes);
  return {
    ready: new Promise((resolve, reject) => {
      child.stdout.once('data', () => resolve(performance.now() - started));
      child.once('exit', (code) => reject(new Error(`the flood's clients exited with ${code}`)));
    }),
  };
}

function rssMb(pid: number): number {
  return Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
}

describe('1,000 never-reading small-window connections pipelining the public document', () => {
  it('leave a keyed listPets answered 200 within 2 s throughout, hold no slot in flight, and are closed by the send timeout', async () => {
    const gateway = started!.replicas[0]!;
    const rssBefore = rssMb(gateway.child.pid!);
    const document = 'GET /v1/openapi.json HTTP/1.1\r\nHost: gw.example\r\n\r\n'.repeat(PIPELINED);
    const floodStarted = performance.now();
    let floodReady = Number.NaN;
    smallWindowFlood(gateway.port, HOSTILE, document).ready.then(
      (ms) => (floodReady = ms),
      () => undefined,
    );
    const asked: Array<{ status: number; ms: number; at: number }> = [];
    let maxInFlight = 0;
    // From the flood's first connection until the send timeout has closed them: a keyed listPets every 200 ms.
    // Until the send timeout has had time to fire on the last connection taken in (a check runs every second at most).
    const until = () => (Number.isNaN(floodReady) ? Number.POSITIVE_INFINITY : floodStarted + floodReady + SEND_TIMEOUT_MS + scaled(3000));
    while (performance.now() < until() && performance.now() - floodStarted < scaled(60_000)) {
      const at = performance.now() - floodStarted;
      const status = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets?limit=1`, {
        headers: { Authorization: `Bearer ${key}` },
        signal: AbortSignal.timeout(scaled(PATIENCE_MS * 3)),
      }).then(
        async (res) => {
          await res.arrayBuffer();
          return res.status;
        },
        () => 0,
      );
      asked.push({ status, ms: performance.now() - floodStarted - at, at });
      const inFlight = (await metrics(gateway.adminPort)).get(seriesKey('petstore_gateway_in_flight_requests', { environment: 'production' })) ?? -1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const rssDuring = rssMb(gateway.child.pid!);
    const closed =
      (await metrics(gateway.adminPort)).get(
        seriesKey('petstore_gateway_connections_evicted_total', { listener: 'listener', reason: 'send_timeout', environment: 'production' }),
      ) ?? 0;
    const slowest = Math.max(...asked.map(({ ms }) => ms));
    console.log(
      JSON.stringify({
        hostile: HOSTILE,
        floodReadyMs: Math.round(floodReady),
        asked: asked.length,
        statuses: [...new Set(asked.map(({ status }) => status))],
        slowestMs: Math.round(slowest),
        medianMs: Math.round(asked.map(({ ms }) => ms).sort((a, b) => a - b)[Math.floor(asked.length / 2)]!),
        maxInFlight,
        closedBySendTimeout: closed,
        rssMb: { before: Math.round(rssBefore), after: Math.round(rssDuring) },
      }),
    );
    expect(Number.isNaN(floodReady)).toBe(false);
    expect(asked.map(({ status }) => status)).toEqual(asked.map(() => 200));
    expect(slowest).toBeLessThan(scaled(PATIENCE_MS));
    // The document's answers are handed over whole: they hold no slot, only the keyed requests do.
    expect(maxInFlight).toBeLessThanOrEqual(2);
    // Each connection's first answer stalled on its 4 KB window: the send timeout closed the connection.
    expect(closed).toBeGreaterThanOrEqual(HOSTILE * 0.9);
  });
});

/** More /metrics pullers than the admin listener's default cap (listen.adminMaxConnections 256), as in the issue. */
const PULLERS = 260;
const PROBE_PATIENCE_MS = 1000;

describe('260 never-reading /metrics pullers on the admin listener', () => {
  it('leave /readyz answered 200 within 1 s throughout, from the first puller on', async () => {
    const gateway = started!.replicas[0]!;
    const flood = smallWindowFlood(gateway.adminPort, PULLERS, 'GET /metrics HTTP/1.1\r\nHost: adm\r\n\r\n'.repeat(PIPELINED));
    let floodReady = Number.NaN;
    flood.ready.then(
      (ms) => (floodReady = ms),
      () => undefined,
    );
    const probes: Array<{ status: number; ms: number }> = [];
    const until = performance.now() + scaled(6000);
    while (performance.now() < until) {
      const started = performance.now();
      const status = await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`, { signal: AbortSignal.timeout(scaled(PROBE_PATIENCE_MS * 5)) }).then(
        async (res) => {
          await res.arrayBuffer();
          return res.status;
        },
        () => 0,
      );
      probes.push({ status, ms: performance.now() - started });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const slowest = Math.max(...probes.map(({ ms }) => ms));
    console.log(JSON.stringify({ pullers: PULLERS, floodReadyMs: Math.round(floodReady), probes: probes.length, slowestMs: Math.round(slowest) }));
    expect(Number.isNaN(floodReady)).toBe(false);
    expect(probes.map(({ status }) => status)).toEqual(probes.map(() => 200));
    expect(slowest).toBeLessThan(scaled(PROBE_PATIENCE_MS));
  });
});
