// Checking answers costs bounded CPU: 16 hostile answers at once cost a few ms each beyond relaying them, and /healthz keeps answering.
import { Agent, get } from 'node:http';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { type Edge, startEdge } from '../helpers/start-edge.ts';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * The backend and the 16 callers, in a worker thread: their own event loop, so what /healthz measures is the gateway's alone. The
 * backend answers every request with 63 nested arrays around 65,504 × `0.0` (262,141 bytes, under the 256 KiB bound; each `0.0` an
 * integer spelled with a fraction), echoing X-Request-Id; the callers report how many of them got exactly those bytes.
 */
const LOAD = `
const { parentPort } = require('node:worker_threads');
const { createServer } = require('node:http');
const HOSTILE = Buffer.from('['.repeat(63) + Array(65504).fill('0.0').join(',') + ']'.repeat(63));
const server = createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': HOSTILE.length, 'X-Request-Id': String(req.headers['x-request-id']) });
  res.end(HOSTILE);
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ backend: 'http://127.0.0.1:' + server.address().port + '/v1', bytes: HOSTILE.length }));
parentPort.on('message', async ({ port, apiKey }) => {
  const got = await Promise.all(Array.from({ length: 16 }, async (_, at) => {
    const answer = await fetch('http://127.0.0.1:' + port + '/v1/pets', {
      headers: { authorization: 'Bearer ' + apiKey, 'x-request-id': 'hostile-' + String(at).padStart(4, '0') },
    });
    const body = Buffer.from(await answer.arrayBuffer());
    return answer.status === 200 && body.equals(HOSTILE);
  }));
  parentPort.postMessage({ intact: got.filter(Boolean).length });
});
`;

async function startLoad(): Promise<{ backend: string; bytes: number; call(port: number, apiKey: string): Promise<number> }> {
  const worker = new Worker(LOAD, { eval: true });
  closers.push(() => worker.terminate().then(() => undefined));
  const next = () => new Promise<Record<string, unknown>>((resolve, reject) => worker.once('message', resolve).once('error', reject));
  const { backend, bytes } = (await next()) as { backend: string; bytes: number };
  return {
    backend,
    bytes,
    async call(port, apiKey) {
      const reply = next();
      worker.postMessage({ port, apiKey });
      return ((await reply) as { intact: number }).intact;
    },
  };
}

/** One /healthz on the admin listener: milliseconds to its whole answer. */
function healthz(port: number, agent: Agent): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/healthz', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - started));
    }).on('error', reject);
  });
}

/**
 * 16 calls answered with the hostile body while /healthz is probed every few ms: how many got the body whole, the probes' p99, and
 * the CPU time this thread (the gateway's; the load runs in its worker) spent meanwhile, which a busy machine does not inflate.
 */
async function sixteenHostileAnswers(edge: Edge, load: Awaited<ReturnType<typeof startLoad>>): Promise<{ intact: number; p99: number; cpuMs: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const probes: number[] = [];
  let calling = true;
  const probing = (async () => {
    while (calling) {
      probes.push(await healthz(edge.running.adminPort, agent));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  const before = process.threadCpuUsage();
  const intact = await load.call(edge.running.port, edge.gateway.apiKey);
  const spent = process.threadCpuUsage(before);
  calling = false;
  await probing;
  agent.destroy();
  const sorted = probes.sort((a, b) => a - b);
  return { intact, p99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!, cpuMs: (spent.user + spent.system) / 1000 };
}

/** A gateway in front of the load's backend checking answers as `production` says, warmed as a serving one is. */
async function measured(load: Awaited<ReturnType<typeof startLoad>>, production: Record<string, unknown>) {
  const edge = await startEdge(load.backend, { contractResponses: { production } });
  closers.push(() => edge.close());
  // The first request through a fresh pipeline compiles and loads what it uses.
  await load.call(edge.running.port, edge.gateway.apiKey);
  return { edge, ...(await sixteenHostileAnswers(edge, load)) };
}

describe.each([
  ['enforce', { mode: 'enforce' }],
  ['report at sample 1', { mode: 'report', sample: 1 }],
])('16 concurrent hostile 262 KB answers under %s', (_name, production) => {
  it('each answer costs the gateway a few ms of CPU more than relaying it unchecked; /healthz keeps answering within a probe timeout', async () => {
    const load = await startLoad();
    expect(load.bytes).toBe(262_141);
    // The same gateway with checks off, at the same moment: what relaying the load costs without any check.
    const unchecked = await measured(load, { mode: 'off' });
    const checked = await measured(load, production);
    expect([unchecked.intact, checked.intact]).toEqual([16, 16]);
    const figures = `CPU ${checked.cpuMs.toFixed(0)} ms checked, ${unchecked.cpuMs.toFixed(0)} ms unchecked; /healthz p99 ${checked.p99.toFixed(1)} ms checked, ${unchecked.p99.toFixed(1)} ms unchecked`;
    // Before: 160-700 ms of CPU per answer, /healthz p50 past a second. The wall-clock p99 on a machine shared with other work
    // swings with its load (docs/decisions/0025-bounded-answer-checks.md has the figures on a quiet one); CPU time does not.
    expect((checked.cpuMs - unchecked.cpuMs) / 16, figures).toBeLessThan(5);
    expect(checked.p99, figures).toBeLessThan(1000);
    const counted = (await checked.edge.gateway.scrape())
      .split('\n')
      .find((line) => line.startsWith('petstore_gateway_upstream_contract_unchecked_total{operation="listPets",reason="too_deep"'));
    expect(Number(counted?.split(' ').at(-1))).toBe(32);
  });
});
