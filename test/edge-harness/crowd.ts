// Runs a crowd case: hostile connections held open, then a well-behaved client alongside, which must be answered within its timeout.
import { get } from 'node:http';
import { connect, type Socket } from 'node:net';
import { startScriptedUpstream } from '../../support/start-upstream.ts';
import type { CrowdSpec } from './crowd-generators.ts';
import { harnessConfig, startCaseGateway, type HarnessEnvironment } from './gateway.ts';

/** The well-behaved client's timeout: what a client or a probe would wait before giving up. */
export const WITNESS_TIMEOUT_MS = 2000;
/** How many times the witness asks, each on a connection of its own, while the crowd holds on. */
const WITNESS_ASKS = 3;
const DOCUMENT = 'GET /v1/openapi.json HTTP/1.1\r\nHost: gw.example\r\n\r\n';
const HALF_HEAD = 'GET /v1/pets HTTP/1.1\r\nHost: gw.example\r\nX-Slow: ';

export interface CrowdResult {
  /** Each witness answer's status (0: none in time) and how long it took. */
  witness: Array<{ status: number; ms: number }>;
  /** The in-flight gauge once the crowd has gone (undefined: it never read 0). */
  inFlightAfter: number | undefined;
}

/** The invariant: every witness request answered 200 within WITNESS_TIMEOUT_MS, and nothing left in flight once the crowd went. */
export function crowdViolations(result: CrowdResult): string[] {
  const violations: string[] = [];
  for (const [i, { status, ms }] of result.witness.entries())
    if (status !== 200 || ms >= WITNESS_TIMEOUT_MS) violations.push(`witness request ${i}: status ${status} after ${Math.round(ms)} ms`);
  if (result.inFlightAfter !== 0) violations.push(`in flight after the crowd left: ${result.inFlightAfter}`);
  return violations;
}

export async function runCrowdCase(spec: CrowdSpec, environment: HarnessEnvironment): Promise<CrowdResult> {
  const upstream = await startScriptedUpstream((_req, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]'));
  const crowd: Socket[] = [];
  try {
    const base = harnessConfig(environment.redisUrl, upstream.baseUrl, { maxSockets: 4, timeoutMs: 500, totalTimeoutMs: 1500 });
    const { maxConnections, sendTimeoutMs } = spec;
    // A keyed crowd's requests are real work at the upstream, each in flight until its answer is handed over (a stalled stream
    // until sendTimeoutMs): slots for each of them and the witness. The document is answered whole at once: a crowd asking
    // for it must hold no slot at all, so the slots are fewer than its connections.
    const maxInFlight = spec.neverReading.keyed ? spec.neverReading.connections + spec.maxInFlight : spec.maxInFlight;
    const gateway = await startCaseGateway({ ...base, listen: { ...base.listen, maxConnections, sendTimeoutMs, maxInFlight } });
    try {
      const open = (bytes: string) => {
        const socket = connect({ port: gateway.port, host: '127.0.0.1' });
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
      const key = environment.keys[0]!;
      const asked = spec.neverReading.keyed ? `GET /v1/pets HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${key}\r\n\r\n` : DOCUMENT;
      const neverReading = () => Promise.all(Array.from({ length: spec.neverReading.connections }, () => open(asked.repeat(spec.neverReading.pipelined))));
      const slowHeads = () => Promise.all(Array.from({ length: spec.slowHeads.connections }, () => open(HALF_HEAD.slice(0, spec.slowHeads.bytes))));
      if (spec.slowHeadsFirst) await slowHeads().then(neverReading);
      else await neverReading().then(slowHeads);
      const witness: CrowdResult['witness'] = [];
      for (let i = 0; i < WITNESS_ASKS; i++) witness.push(await ask(gateway.port, environment.keys[1]!));
      for (const socket of crowd) socket.destroy();
      return { witness, inFlightAfter: await gateway.settledInFlight(WITNESS_TIMEOUT_MS + sendTimeoutMs) };
    } finally {
      await gateway.close();
    }
  } finally {
    for (const socket of crowd) socket.destroy();
    await upstream.close();
  }
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
