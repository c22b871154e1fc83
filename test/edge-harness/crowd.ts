// Runs a crowd case: hostile connections held open, then a well-behaved client alongside, which must be answered within its timeout.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { get } from 'node:http';
import { connect, type Socket } from 'node:net';
import { LINGER } from '../../src/server/client-connections.ts';
import { startScriptedUpstream } from '../../support/start-upstream.ts';
import { scaled } from '../../support/time-scale.ts';
import type { CrowdSpec } from './crowd-generators.ts';
import { harnessConfig, startCaseGateway, type HarnessEnvironment } from './gateway.ts';

/** The well-behaved client's timeout: what a client or a probe would wait before giving up (2 s on a quiet machine). */
export const WITNESS_TIMEOUT_MS = scaled(2000);
/** Past the lingering close's 2 s, what a poster's connection may outlive its answer by: the check's period and scheduling. */
const LINGER_SLACK_MS = scaled(1000);
/** The receive window of a small-window never-reading client (test/helpers/small-window-clients.py). */
const SMALL_WINDOW = 4096;
/** How many times the witness asks, each on a connection of its own, while the crowd holds on. */
const WITNESS_ASKS = 3;
const DOCUMENT = 'GET /v1/openapi.json HTTP/1.1\r\nHost: gw.example\r\n\r\n';
const HALF_HEAD = 'GET /v1/pets HTTP/1.1\r\nHost: gw.example\r\nX-Slow: ';

export interface CrowdResult {
  /** Each witness answer's status (0: none in time) and how long it took. */
  witness: Array<{ status: number; ms: number }>;
  /** Each poster's answer status (0: none) and how long its connection outlived the answer's first byte (or its connect, without one). */
  posters: Array<{ status: number; heldMs: number }>;
  /** Whether every connection of the crowd, the witness's too, fitted under the cap: then none was evicted and every poster answered. */
  underCap: boolean;
  /** The in-flight gauge once the crowd has gone (undefined: it never read 0). */
  inFlightAfter: number | undefined;
}

/** The invariant: every witness request answered 200 within WITNESS_TIMEOUT_MS, and nothing left in flight once the crowd went. */
export function crowdViolations(result: CrowdResult): string[] {
  const violations: string[] = [];
  for (const [i, { status, ms }] of result.witness.entries())
    if (status !== 200 || ms >= WITNESS_TIMEOUT_MS) violations.push(`witness request ${i}: status ${status} after ${Math.round(ms)} ms`);
  for (const [i, { status, heldMs }] of result.posters.entries()) {
    if (heldMs >= LINGER.ms + LINGER_SLACK_MS) violations.push(`poster ${i}: held its connection ${Math.round(heldMs)} ms past its answer`);
    if (result.underCap && status !== 413 && status !== 401) violations.push(`poster ${i}: read status ${status}, not its refusal`);
  }
  if (result.inFlightAfter !== 0) violations.push(`in flight after the crowd left: ${result.inFlightAfter}`);
  return violations;
}

export async function runCrowdCase(spec: CrowdSpec, environment: HarnessEnvironment): Promise<CrowdResult> {
  const upstream = await startScriptedUpstream((_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]'));
  try {
    const base = harnessConfig(environment.redisUrl, upstream.baseUrl, { maxSockets: 4, timeoutMs: 500, totalTimeoutMs: 1500 });
    const { maxConnections, sendTimeoutMs } = spec;
    const maxInFlight = crowdMaxInFlight(spec);
    const gateway = await startCaseGateway({ ...base, listen: { ...base.listen, maxConnections, sendTimeoutMs, maxInFlight } });
    try {
      const crowd = await openCrowd(gateway.port, spec, environment.keys[0]!);
      try {
        const witness: CrowdResult['witness'] = [];
        for (let i = 0; i < WITNESS_ASKS; i++) witness.push(await ask(gateway.port, environment.keys[1]!));
        const posters = await crowd.posters;
        await crowd.close();
        const { connections } = spec.neverReading;
        const underCap = connections + spec.slowHeads.connections + spec.posters.connections + 1 <= maxConnections;
        return { witness, posters, underCap, inFlightAfter: await gateway.settledInFlight(WITNESS_TIMEOUT_MS + sendTimeoutMs) };
      } finally {
        await crowd.close();
      }
    } finally {
      await gateway.close();
    }
  } finally {
    await upstream.close();
  }
}

/**
 * listen.maxInFlight for a crowd's case. A keyed crowd's requests are real work at the upstream, each in flight until its answer is
 * handed over (a stalled stream until sendTimeoutMs): slots for each of them and the witness. The document is answered whole at
 * once: a crowd asking for it must hold no slot at all, so the slots are fewer than its connections.
 * The posters' requests are in flight too, for the moment before their refusal (the key's lookup, then the refusal): sent
 * alongside the witness's, they would shed it at a cap that counted no slot for them.
 */
export function crowdMaxInFlight(spec: CrowdSpec): number {
  const crowdSlots = (spec.neverReading.keyed ? spec.neverReading.connections : 0) + spec.posters.connections;
  return crowdSlots + spec.maxInFlight;
}

/** A crowd held open against a listener. */
export interface OpenCrowd {
  /** Each poster's answer status and how long its connection outlived the answer, once every poster's connection has closed. */
  posters: Promise<CrowdResult['posters']>;
  /** Closes every connection of the crowd and stops the small-window clients; again: nothing more. */
  close(): Promise<void>;
}

/**
 * Opens `spec`'s crowd against the listener on `port` (the never-reading clients and the slow heads, in the spec's order), then
 * starts its posters, which send alongside whatever the caller does next, or once `postersAfter` settles. `key` is the keyed
 * crowd's. A crowd that cannot be opened whole is closed before the error is thrown.
 */
export async function openCrowd(port: number, spec: CrowdSpec, key: string, postersAfter?: Promise<unknown>): Promise<OpenCrowd> {
  const crowd: Socket[] = [];
  let smallWindows: ChildProcess | undefined;
  let closed = false;
  const close = async () => {
    // Posters waiting for `postersAfter` never start once the crowd is closed.
    closed = true;
    for (const socket of crowd) socket.destroy();
    await stop(smallWindows);
  };
  try {
    const open = (bytes: string) => {
      const socket = connect({ port, host: '127.0.0.1' });
      crowd.push(socket);
      socket.on('error', () => undefined);
      // Never reads: what the gateway writes stays in the kernel's buffers, then in the gateway's.
      socket.pause();
      return new Promise<void>((resolve) => {
        socket.once('connect', () => {
          if (bytes !== '') socket.write(bytes);
          resolve();
        });
        socket.once('close', () => resolve());
      });
    };
    const asked = spec.neverReading.keyed ? `GET /v1/pets HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${key}\r\n\r\n` : DOCUMENT;
    const { connections, pipelined, smallWindow } = spec.neverReading;
    const neverReading = async () => {
      if (!smallWindow) await Promise.all(Array.from({ length: connections }, () => open(asked.repeat(pipelined))));
      else if (connections > 0) smallWindows = await smallWindowClients(port, connections, asked.repeat(pipelined));
    };
    const slowHeads = () => Promise.all(Array.from({ length: spec.slowHeads.connections }, () => open(HALF_HEAD.slice(0, spec.slowHeads.bytes))));
    if (spec.slowHeadsFirst) await slowHeads().then(neverReading);
    else await neverReading().then(slowHeads);
  } catch (error) {
    await close();
    throw error;
  }
  // The posters send alongside the caller's requests: their lingering closes overlap its answers.
  const startPosters = () => Promise.all(closed ? [] : Array.from({ length: spec.posters.connections }, () => post(port, spec.posters, key, crowd)));
  const posters = postersAfter === undefined ? startPosters() : postersAfter.then(startPosters, () => []);
  return { posters, close };
}

/** `connections` never-reading clients with a small receive window, each sending `bytes` (test/helpers/small-window-clients.py). */
async function smallWindowClients(port: number, connections: number, bytes: string): Promise<ChildProcess> {
  const script = new URL('../helpers/small-window-clients.py', import.meta.url).pathname;
  const child = spawn('python3', [script, '127.0.0.1', String(port), String(connections), String(SMALL_WINDOW)], { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.end(bytes);
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('exit', (code) => reject(new Error(`small-window clients exited with ${code}`)));
      child.once('error', reject);
    });
  } catch (error) {
    await stop(child);
    throw error;
  }
  return child;
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

const POST_CHUNK = Buffer.alloc(64 * 1024, 0x20);

/**
 * A client that POSTs a pet with a body far larger than the gateway accepts and sends it until the gateway closes: at full speed, or
 * a chunk every 20 ms. Returns the status it read (0: none) and how long the connection outlived the answer (or its connect).
 */
function post(port: number, how: CrowdSpec['posters'], key: string, crowd: Socket[]): Promise<{ status: number; heldMs: number }> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    crowd.push(socket);
    let received = '';
    let since = performance.now();
    let trickling: NodeJS.Timeout | undefined;
    socket.on('data', (data) => {
      if (received === '') since = performance.now();
      received += data.toString('latin1');
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      clearInterval(trickling);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1] ?? 0), heldMs: performance.now() - since });
    });
    socket.once('connect', () => {
      since = performance.now();
      const auth = how.keyed ? `Authorization: Bearer ${key}\r\n` : '';
      socket.write(`POST /v1/pets HTTP/1.1\r\nHost: gw.example\r\nContent-Type: application/json\r\nContent-Length: 1000000000000\r\n${auth}\r\n`);
      if (how.trickle) {
        trickling = setInterval(() => socket.writable && socket.write(POST_CHUNK), 20);
        return;
      }
      const pump = () => {
        while (socket.writable) if (!socket.write(POST_CHUNK)) return void socket.once('drain', pump);
      };
      pump();
    });
  });
}

/** A keyed listPets on a new connection, read whole: its status (0 if none within WITNESS_TIMEOUT_MS) and how long it took. */
function ask(port: number, key: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const done = (status: number) => resolve({ status, ms: performance.now() - started });
    const request = get({ host: '127.0.0.1', port, path: '/v1/pets?limit=1', headers: { Authorization: `Bearer ${key}` }, agent: false }, (res) => {
      res.resume();
      res.once('end', () => done(res.statusCode ?? 0));
      res.once('error', () => done(0));
    });
    request.setTimeout(WITNESS_TIMEOUT_MS, () => request.destroy());
    request.once('error', () => done(0));
  });
}
