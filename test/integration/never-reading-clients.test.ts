// Clients that never read their answers hold their own connections, never the replica: keyed requests and probes keep being answered.
import { type ChildProcess, spawn } from 'node:child_process';
import { get, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../src/server/server.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { scaled } from '../../support/time-scale.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../../support/start-upstream.ts';

/**
 * The reproduction scaled to a 2-core test machine shared with other work: HOSTILE never-reading connections with a 4 KB
 * receive window, far more than listen.maxInFlight, each pipelining PIPELINED requests for the document.
 */
const HOSTILE = 64;
const PIPELINED = 16;
const RCVBUF = 4096;
const MAX_IN_FLIGHT = 8;
/** More /metrics pullers than the admin listener's default cap (256), as in the report. */
const ADMIN_PULLERS = 260;
/** The public listener's cap, scaled down from 10,000 so a wave from one test process fills it many times over. */
const PUBLIC_CAP = 64;
/** Never-reading keyed clients whose answers stall. */
const STALLED = 12;
/** Short, so the test takes seconds; production's default is 30 s. */
const SEND_TIMEOUT_MS = 2500;
/** What a well-behaved client may wait, at most, for each answer: the 2 s on a quiet machine. */
const PATIENCE_MS = scaled(2000);
/** What a probe may wait: its 1 s timeout on a quiet machine. */
const PROBE_PATIENCE_MS = scaled(1000);

let upstream: ScriptedUpstream | undefined;
let gateway: TestGateway | undefined;
let running: RunningGateway | undefined;
const hostile: Socket[] = [];
let smallWindows: ChildProcess | undefined;
afterEach(async () => {
  smallWindows?.kill('SIGKILL');
  smallWindows = undefined;
  for (const socket of hostile.splice(0)) socket.destroy();
  await running?.shutdown('test over');
  await gateway?.close();
  await upstream?.close();
  running = undefined;
});

/** Pets as the upstream lists them: large, so an answer a client does not read backs up in its connection. */
const MANY_PETS = JSON.stringify(Array.from({ length: 150_000 }, (_, id) => ({ id, name: `pet number ${id}`, tag: 'hostile-test' })));

async function start(listen: Record<string, unknown>) {
  upstream = await startScriptedUpstream((_req, res: ServerResponse) => {
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(MANY_PETS);
  });
  gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { PORT: '0', ADMIN_PORT: '0' }, overrides: { listen } });
  running = await gateway.listen();
  return running;
}

/** A connection that sends `requests` pipelined and never reads a byte of what comes back. */
async function neverReading(port: number, request: string, requests: number): Promise<Socket> {
  const socket = connect({ port, host: '127.0.0.1' });
  hostile.push(socket);
  socket.on('error', () => undefined);
  socket.pause();
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(request.repeat(requests));
  return socket;
}

/** `connections` clients with a small receive window (test/helpers/small-window-clients.py) sending `bytes` each, never reading. */
async function smallWindowClients(port: number, connections: number, bytes: string): Promise<void> {
  const child = spawn(
    'python3',
    [new URL('../helpers/small-window-clients.py', import.meta.url).pathname, '127.0.0.1', String(port), String(connections), String(RCVBUF)],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  smallWindows = child;
  child.stdin.end(bytes);
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`small-window clients exited with ${code}`)));
  });
}

function gauge(exposition: string, name: string): number | undefined {
  return parseExposition(exposition).get(seriesKey(name, { environment: 'production' }));
}

/** Asks `url` every 200 ms for `forMs`; returns each status and how long it took (0 and the time for a failure). */
async function askThroughout(url: string, headers: Record<string, string>, forMs: number): Promise<Array<{ status: number; ms: number }>> {
  const seen: Array<{ status: number; ms: number }> = [];
  const until = performance.now() + forMs;
  while (performance.now() < until) {
    const started = performance.now();
    const status = await fetch(url, { headers, signal: AbortSignal.timeout(PATIENCE_MS * 2) }).then(
      async (res) => {
        await res.arrayBuffer();
        return res.status;
      },
      () => 0,
    );
    seen.push({ status, ms: performance.now() - started });
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return seen;
}

describe('clients that pipeline the public document and never read', () => {
  it('leave keyed listPets and the document answered with 200 within 2 s throughout', async () => {
    const { port } = await start({ maxInFlight: MAX_IN_FLIGHT, sendTimeoutMs: SEND_TIMEOUT_MS });
    const document = `GET /v1/openapi.json HTTP/1.1\r\nHost: gw.example\r\n\r\n`;
    await smallWindowClients(port, HOSTILE, document.repeat(PIPELINED));
    const keyed = { Authorization: `Bearer ${gateway!.apiKey}` };
    const [pets, documents] = await Promise.all([
      askThroughout(`http://127.0.0.1:${port}/v1/pets?limit=1`, keyed, 3000),
      askThroughout(`http://127.0.0.1:${port}/v1/openapi.json`, {}, 3000),
    ]);
    for (const seen of [pets, documents]) {
      expect(seen.map(({ status }) => status)).toEqual(seen.map(() => 200));
      expect(Math.max(...seen.map(({ ms }) => ms))).toBeLessThan(PATIENCE_MS);
    }
    expect(gauge(await gateway!.scrape(), 'petstore_gateway_in_flight_requests')).toBeLessThan(MAX_IN_FLIGHT);
  });
});

/** Connections the admin listener closed, for any reason. */
async function adminEvictions(): Promise<number> {
  let sum = 0;
  for (const [series, value] of parseExposition(await gateway!.scrape()))
    if (series.startsWith('petstore_gateway_connections_evicted_total{') && series.includes('listener="admin"')) sum += value;
  return sum;
}

/** One request on a connection of its own (as a probe or a new client makes it): its status and how long it took; 0 for a failure. */
function askOnce(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const request = get({ host: '127.0.0.1', port, path, headers, agent: false, timeout: PATIENCE_MS * 2 }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
    });
    request.once('timeout', () => request.destroy());
    request.once('error', () => resolve({ status: 0, ms: performance.now() - started }));
  });
}

/** Asks with `ask` every 200 ms for `forMs`. */
async function everyFewMs(forMs: number, ask: () => Promise<{ status: number; ms: number }>): Promise<Array<{ status: number; ms: number }>> {
  const seen: Array<{ status: number; ms: number }> = [];
  const until = performance.now() + forMs;
  while (performance.now() < until) {
    seen.push(await ask());
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return seen;
}

describe('clients that pipeline /metrics on the admin listener and never read', () => {
  it('leave /readyz and /healthz answered with 200 within 1 s throughout, the stalled answers evicted and counted', async () => {
    // The admin listener's defaults (listen.adminMaxConnections 256), and more pullers than it admits.
    const { adminPort } = await start({});
    await smallWindowClients(adminPort, ADMIN_PULLERS, 'GET /metrics HTTP/1.1\r\nHost: adm\r\n\r\n'.repeat(PIPELINED));
    // From when the listener has taken every puller in: a probe connecting during the burst waits in the kernel's accept
    // queue behind them, each served its first render in turn (about 2 s for 260 on this shared 2-core machine).
    await waitFor(async () => (await adminEvictions()) >= ADMIN_PULLERS - 256, 10_000);
    const evictedBefore = await adminEvictions();
    const [ready, healthy] = await Promise.all([everyFewMs(3000, () => askOnce(adminPort, '/readyz')), everyFewMs(3000, () => askOnce(adminPort, '/healthz'))]);
    for (const seen of [ready, healthy]) {
      expect(seen.map(({ status }) => status)).toEqual(seen.map(() => 200));
      expect(Math.max(...seen.map(({ ms }) => ms))).toBeLessThan(PROBE_PATIENCE_MS);
    }
    // The cap was full of pullers: the first probe's connection made room by closing one whose answer waited on it.
    expect(await adminEvictions()).toBeGreaterThan(evictedBefore);
  });
});

describe('a wave of slow heads at the public connection cap', () => {
  it("keeps a new client's wait under 1 s, and the evictions are counted", async () => {
    const { port } = await start({ maxConnections: PUBLIC_CAP });
    let wave = 0;
    // A connection every 5 ms, each sending half a head and no more, for as long as the client asks.
    const opening = setInterval(() => {
      for (let i = 0; i < 4; i++) {
        const socket = connect({ port, host: '127.0.0.1' });
        hostile.push(socket);
        socket.on('error', () => undefined);
        socket.once('connect', () => socket.write('GET /v1/pets HTTP/1.1\r\nHost: gw'));
        wave++;
      }
    }, 20);
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const keyed = { Authorization: `Bearer ${gateway!.apiKey}` };
      const seen = await everyFewMs(3000, () => askOnce(port, '/v1/pets?limit=1', keyed));
      expect(seen.map(({ status }) => status)).toEqual(seen.map(() => 200));
      expect(Math.max(...seen.map(({ ms }) => ms))).toBeLessThan(PROBE_PATIENCE_MS);
    } finally {
      clearInterval(opening);
    }
    expect(wave).toBeGreaterThan(PUBLIC_CAP * 4);
    const evicted = parseExposition(await gateway!.scrape()).get(
      seriesKey('petstore_gateway_connections_evicted_total', { listener: 'listener', reason: 'slow_head', environment: 'production' }),
    );
    expect(evicted).toBeGreaterThan(wave - PUBLIC_CAP * 2);
  });
});

describe('an answer the client takes nothing of', () => {
  it('is cut off after listen.sendTimeoutMs: its request leaves flight and the closing is counted', async () => {
    const { port } = await start({ maxInFlight: 1000, sendTimeoutMs: SEND_TIMEOUT_MS });
    // A key each, so no client meets its rate limit: every one is answered in full.
    const listPets = () => `GET /v1/pets HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${gateway!.addKey()}\r\n\r\n`;
    await Promise.all(Array.from({ length: STALLED }, () => neverReading(port, listPets(), 2)));
    // The upstream's answers (several MB each) back up in the connections: each client's first answer stays unfinished, in flight.
    let inFlight = 0;
    const until = performance.now() + SEND_TIMEOUT_MS / 2;
    while (performance.now() < until && inFlight < STALLED) inFlight = gauge(await gateway!.scrape(), 'petstore_gateway_in_flight_requests') ?? 0;
    expect(inFlight).toBe(STALLED);
    const started = performance.now();
    while (performance.now() - started < SEND_TIMEOUT_MS + 3000 && inFlight > 0) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      inFlight = gauge(await gateway!.scrape(), 'petstore_gateway_in_flight_requests') ?? -1;
    }
    expect(inFlight).toBe(0);
    const closed = parseExposition(await gateway!.scrape()).get(
      seriesKey('petstore_gateway_connections_evicted_total', { listener: 'listener', reason: 'send_timeout', environment: 'production' }),
    );
    expect(closed).toBe(STALLED);
  });
});
