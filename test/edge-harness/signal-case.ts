// Runs a signal case: the built gateway started as an operator starts it, a crowd held open against it, a well-behaved client's
// request held by a slow backend, and the case's signals sent during it and the drain; observes what each client and the process showed.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { startScriptedUpstream } from '../../support/start-upstream.ts';
import { scaled } from '../../support/time-scale.ts';
import { type GatewayExit, type GatewayGroup, gatewayConfigFile, SHUTTING_DOWN, signalGroup, startGatewayGroup } from '../helpers/gateway-group.ts';
import { crowdMaxInFlight, openCrowd } from './crowd.ts';
import { HARNESS_PEPPER, type HarnessEnvironment } from './gateway.ts';
import { listensOn, signalPending } from './process-state.ts';
import type { ScheduledSignal, SignalCase } from './signal-generators.ts';

/** shutdown.gracePeriodMs of a case: past the longest hold of the in-flight request, so only a broken drain leaves it unanswered. */
export const SIGNAL_GRACE_MS = scaled(3000);
/** What a scheduled moment may slip by on a busy machine: a signal taken, a listener closed, an exit past its bound. */
export const SIGNAL_SLACK_MS = scaled(1500);
/** How long the process may take after the drain to write its last log lines (LOG_DRAIN_MS in src/main.ts). */
export const LOG_DRAIN_MS = 2000;

/** A client's connection: the bytes it read, and how it ended (`refused`: ECONNREFUSED at connect; an error code; `closed`). */
export interface ClientRead {
  id: string;
  bytes: string;
  ended: string;
}

export interface SentSignal extends ScheduledSignal {
  /** performance.now() when it was sent. */
  sentAt: number;
  /** kill(2) found a process to send it to. */
  reached: boolean;
  /** performance.now() by which the gateway had taken it (no longer pending); undefined when the gateway exited first. */
  takenBy?: number;
  /** A signal sent before was still pending when this one was sent (a starved gateway): the two may have merged into one delivery. */
  mayHaveMerged: boolean;
}

export interface SignalObservation {
  signalCase: SignalCase;
  /** The well-behaved client's request, held by the backend: what it read, and the body the backend wrote for it. */
  witness: ClientRead & { expectedBody: string };
  /** performance.now() when the backend let the witness's answer go. */
  releasedAt: number;
  sent: SentSignal[];
  /** A client that connected once the shutdown line was logged; undefined when the gateway had exited before the line came. */
  latecomer: ClientRead | undefined;
  /** performance.now() when the public port was first seen not listening; undefined: still listening at the deadline. */
  listenerClosedAt: number | undefined;
  /** How the group's leader exited; undefined: it had not by the deadline (and was killed). */
  exit: GatewayExit | undefined;
  /** Everything the group wrote, whole. */
  output: string;
}

/** The backend's answer to a listPets whose X-Request-Id is `id`: a pet named after it, so that each answer is told from the others. */
export const petsFor = (id: string): string => JSON.stringify([{ id: 1, name: id, categoryId: 1 }]);

const listPets = (key: string, id: string) => `GET /v1/pets HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${key}\r\nX-Request-Id: ${id}\r\n\r\n`;

export async function runSignalCase(signalCase: SignalCase, environment: HarnessEnvironment): Promise<SignalObservation> {
  const witnessId = `signal-witness-${randomUUID()}`;
  let asked: () => void = () => undefined;
  const backendAsked = new Promise<void>((resolve) => (asked = resolve));
  let releasedAt = Number.POSITIVE_INFINITY;
  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const id = String(req.headers['x-request-id']);
    res.writeHead(200, { 'Content-Type': 'application/json', 'X-Request-Id': id }).end(petsFor(id));
  };
  const upstream = await startScriptedUpstream((req, res) => {
    if (req.headers['x-request-id'] !== witnessId) return answer(req, res);
    asked();
    setTimeout(() => {
      releasedAt = performance.now();
      answer(req, res);
    }, scaled(signalCase.backendMs));
  });
  const { crowd } = signalCase;
  const config = gatewayConfigFile({
    listen: { host: '127.0.0.1', maxConnections: crowd.maxConnections, sendTimeoutMs: crowd.sendTimeoutMs, maxInFlight: crowdMaxInFlight(crowd) },
    // The run's keys make requests across its cases: no window's limit refuses the witness.
    rateLimit: { limits: { production: { default: 10_000_000, createPet: 10_000_000 } } },
    // The witness's key lookup and count go to Redis: on a busy machine a round trip past the default 500 ms would answer it 503.
    redis: { commandTimeoutMs: scaled(500) },
  });
  let group: GatewayGroup | undefined;
  try {
    group = await startGatewayGroup(signalCase.startedBy, {
      GATEWAY_CONFIG: config.path,
      GATEWAY_ENVIRONMENT: 'production',
      REDIS_URL: environment.redisUrl,
      UPSTREAM_URL: upstream.baseUrl,
      API_KEY_PEPPER: HARNESS_PEPPER,
      SHUTDOWN_GRACE_PERIOD_MS: String(SIGNAL_GRACE_MS),
    });
    // The posters connect once the witness's request is in flight: at a cap the crowd fills, a newcomer arriving while the
    // witness's bytes are still unread may close it as the oldest newcomer (the crowd property allows that; here the drain is under test).
    const open = await openCrowd(group.port, crowd, environment.keys[0]!, backendAsked);
    try {
      return await signalDuringLoad(signalCase, group, environment.keys[1]!, witnessId, backendAsked, () => releasedAt);
    } finally {
      await open.close();
    }
  } finally {
    if (group !== undefined && signalGroup(group.leader.pid!, 'SIGKILL')) await Promise.race([group.exited, sleep(SIGNAL_SLACK_MS)]);
    await upstream.close();
    config.remove();
  }
}

async function signalDuringLoad(
  signalCase: SignalCase,
  group: GatewayGroup,
  key: string,
  witnessId: string,
  backendAsked: Promise<void>,
  releasedAt: () => number,
): Promise<SignalObservation> {
  const readFor = scaled(signalCase.backendMs) + SIGNAL_GRACE_MS + SIGNAL_SLACK_MS;
  let taken = false;
  void backendAsked.then(() => (taken = true));
  const witness = askUntilTaken(group.port, listPets(key, witnessId), witnessId, readFor, () => taken);
  const reachedBackend = await Promise.race([backendAsked.then(() => true), witness.then(() => false), sleep(scaled(5000)).then(() => false)]);
  if (!reachedBackend) {
    const read = await witness;
    throw new Error(`the witness's request did not reach the backend (${read.ended}): ${JSON.stringify(read.bytes.slice(0, 300))}`);
  }
  const askedAt = performance.now();

  const sent: SentSignal[] = [];
  let latecomer: Promise<ClientRead | undefined> | undefined;
  let listenerClosed: Promise<number | undefined> | undefined;
  for (const scheduled of signalCase.signals) {
    await sleep(Math.max(0, askedAt + (scaled(signalCase.backendMs) * scheduled.atPermille) / 1000 - performance.now()));
    // One delivery per signal sent: none may merge with one still pending (npm's passing on of a group signal included).
    const clear = await until(() => signalPending(group.gatewayPid) !== true, SIGNAL_SLACK_MS);
    const signal = await send(group, scheduled, clear === undefined);
    sent.push(signal);
    if (latecomer === undefined) {
      latecomer = latecomerOnceShutdownLogged(group, key);
      listenerClosed = until(() => !listensOn(group.port), SIGNAL_SLACK_MS);
    }
  }
  const exitBy = SIGNAL_GRACE_MS + LOG_DRAIN_MS + 2 * SIGNAL_SLACK_MS;
  const exit = await Promise.race([group.exited, sleep(exitBy).then(() => undefined)]);
  if (exit !== undefined) await Promise.race([group.closed, sleep(SIGNAL_SLACK_MS)]);
  return {
    signalCase,
    witness: { ...(await witness), expectedBody: petsFor(witnessId) },
    releasedAt: releasedAt(),
    sent,
    latecomer: await latecomer,
    listenerClosedAt: await listenerClosed,
    exit,
    output: group.output(),
  };
}

/** Sends `scheduled` and waits until the gateway has taken it (or is gone). */
async function send(group: GatewayGroup, scheduled: ScheduledSignal, mayHaveMerged: boolean): Promise<SentSignal> {
  const sentAt = performance.now();
  let reached = true;
  if (scheduled.to === 'group') reached = signalGroup(group.leader.pid!, scheduled.signal);
  else {
    try {
      process.kill(group.gatewayPid, scheduled.signal);
    } catch {
      reached = false;
    }
  }
  let state = signalPending(group.gatewayPid);
  const settled = reached
    ? await until(() => {
        state = signalPending(group.gatewayPid);
        return state !== true;
      }, SIGNAL_SLACK_MS)
    : undefined;
  // Gone: the gateway exited, having taken it or not.
  const takenBy = state === false ? settled : undefined;
  return { ...scheduled, sentAt, reached, mayHaveMerged, ...(takenBy === undefined ? {} : { takenBy }) };
}

/** Once the shutdown line is logged, a client connects and asks; undefined if the gateway exited before logging it. */
async function latecomerOnceShutdownLogged(group: GatewayGroup, key: string): Promise<ClientRead | undefined> {
  const exited = () => group.leader.exitCode !== null || group.leader.signalCode !== null;
  const logged = await until(() => group.output().includes(SHUTTING_DOWN) || exited(), SIGNAL_GRACE_MS + SIGNAL_SLACK_MS);
  if (logged === undefined || !group.output().includes(SHUTTING_DOWN)) return undefined;
  const id = `signal-latecomer-${randomUUID()}`;
  return request(group.port, listPets(key, id), id, SIGNAL_GRACE_MS + SIGNAL_SLACK_MS);
}

/** Connections the witness opens at most before its request is taken. */
const WITNESS_ATTEMPTS = 8;
/** The witness waits this much longer before each attempt than before the one before it (scaled): a client's backoff. */
const WITNESS_BACKOFF_MS = 50;

/**
 * The witness's request, as a client sends an idempotent GET: again, on a new connection, when one is closed before any byte of an
 * answer while the backend does not have it yet. At a cap the crowd fills, the gateway may close the witness's connection as the
 * oldest newcomer that has shown nothing (crowd connections the kernel had not yet handed over arrive after it, on a busy machine); the
 * crowd property allows that, and this property is about the drain of a request in flight. While every connection of a full cap has
 * an answer under way, the cap closes each newcomer at once (none of them may be closed): the witness backs off between attempts
 * (50 ms more each time, scaled; 1.4 s in all), as a client would, until an answer frees a connection.
 */
async function askUntilTaken(port: number, bytes: string, id: string, readForMs: number, taken: () => boolean): Promise<ClientRead> {
  for (let attempt = 1; ; attempt++) {
    const read = await request(port, bytes, id, readForMs);
    if (read.bytes !== '' || taken() || attempt === WITNESS_ATTEMPTS) return read;
    await sleep(scaled(WITNESS_BACKOFF_MS * attempt));
  }
}

/** Polls `holds` every 5 ms for at most `deadlineMs`: performance.now() when it first held, or undefined. */
async function until(holds: () => boolean, deadlineMs: number): Promise<number | undefined> {
  const by = performance.now() + deadlineMs;
  for (;;) {
    if (holds()) return performance.now();
    if (performance.now() > by) return undefined;
    await sleep(5);
  }
}

/** Writes `bytes` on a new connection and reads until the gateway closes it (or `readForMs` passes: then `timeout`). */
function request(port: number, bytes: string, id: string, readForMs: number): Promise<ClientRead> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    let read = '';
    let ended = 'closed';
    const timer = setTimeout(() => {
      ended = 'timeout';
      socket.destroy();
    }, readForMs);
    socket.on('data', (chunk: Buffer) => (read += chunk.toString('latin1')));
    socket.once('connect', () => socket.write(bytes));
    socket.once('error', (error: NodeJS.ErrnoException) => (ended = error.code === 'ECONNREFUSED' ? 'refused' : (error.code ?? error.message)));
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ id, bytes: read, ended });
    });
  });
}
