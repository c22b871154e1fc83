// Overload: bounded in-flight requests (503 at once beyond), and slow clients cut off without starving others.
import type { ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../src/server/server.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startScriptedUpstream, type ScriptedUpstream } from '../../support/start-upstream.ts';

let upstream: ScriptedUpstream | undefined;
let gateway: TestGateway | undefined;
let running: RunningGateway | undefined;
afterEach(async () => {
  await running?.shutdown('test over');
  gateway?.close();
  await upstream?.close();
  running = undefined;
});

async function start(overrides: Record<string, unknown>, handler: Parameters<typeof startScriptedUpstream>[0]) {
  upstream = await startScriptedUpstream(handler);
  gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { PORT: '0', ADMIN_PORT: '0' }, overrides });
  running = await gateway.listen();
  return running;
}

describe('load shedding', () => {
  it('answers 503 at once above listen.maxInFlight, and serves again once requests finish', async () => {
    const held: ServerResponse[] = [];
    const { port } = await start({ listen: { maxInFlight: 2 } }, (_req, res) => held.push(res));
    const auth = { Authorization: `Bearer ${gateway!.apiKey}` };
    const first = fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: auth });
    const second = fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: auth });
    await waitFor(async () => held.length === 2);

    const shed = await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: auth });
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(await shed.json()).toEqual({ code: 'service_unavailable', message: 'The gateway is at capacity; retry shortly', status: 503 });

    for (const res of held) res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]');
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    held.length = 0;
    const after = fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: auth });
    await waitFor(async () => held.length === 1);
    held[0]!.writeHead(200, { 'Content-Type': 'application/json' }).end('[]');
    expect((await after).status).toBe(200);
    expect(parseExposition(await gateway!.scrape()).get(seriesKey('petstore_gateway_shed_requests_total', { environment: 'production' }))).toBe(1);
  });
});

describe('the connection cap', () => {
  it('at listen.maxConnections closes the oldest connection with no request yet, admits the newcomer, and counts it', async () => {
    const { port } = await start({ listen: { maxConnections: 2 } }, (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]');
    });
    const open = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
    for (const socket of open) socket.on('error', () => undefined);
    for (const socket of open) await new Promise((resolve) => socket.once('connect', resolve));
    const oldestClosed = new Promise((resolve) => open[0]!.once('close', resolve));
    const request = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gateway!.apiKey}\r\n\r\n`;
    const answerOn = (socket: Socket) =>
      new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (chunk: Buffer) => {
          text += chunk.toString('latin1');
          if (text.includes('\r\n\r\n')) resolve(text);
        });
        socket.write(request);
      });
    const extra = connect(port, '127.0.0.1');
    extra.on('error', () => undefined);
    await new Promise((resolve) => extra.once('connect', resolve));
    expect(await answerOn(extra)).toMatch(/^HTTP\/1\.1 200 /);
    await oldestClosed;
    expect(await answerOn(open[1]!)).toMatch(/^HTTP\/1\.1 200 /);
    const evicted = seriesKey('petstore_gateway_connections_evicted_total', { environment: 'production', listener: 'listener', reason: 'slow_head' });
    expect(parseExposition(await gateway!.scrape()).get(evicted)).toBe(1);
    for (const socket of [...open, extra]) socket.destroy();
  });
});

describe('slow clients', () => {
  it('cuts off clients that trickle their headers with a 408 Error body, while others are served', async () => {
    const { port } = await start({ listen: { headersTimeoutMs: 1000, requestTimeoutMs: 1500 } }, (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]');
    });
    const slow: Array<{ socket: Socket; answer: Promise<string> }> = [];
    for (let i = 0; i < 20; i++) {
      const socket = connect(port, '127.0.0.1');
      const answer = new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
        socket.on('close', () => resolve(text));
        socket.on('error', () => resolve(text));
      });
      socket.write('GET /v1/pets HTTP/1.1\r\nHost: x\r\n');
      slow.push({ socket, answer });
    }
    // Trickle a header byte every 200 ms: never finishing in time.
    const trickle = setInterval(() => {
      for (const { socket } of slow) if (socket.writable) socket.write('X-Slow: a\r\n');
    }, 200);
    try {
      const started = Date.now();
      const res = await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { Authorization: `Bearer ${gateway!.apiKey}` } });
      expect(res.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(1000);
      const answers = await Promise.all(slow.map(({ answer }) => answer));
      for (const answer of answers) {
        expect(answer).toMatch(/^HTTP\/1\.1 408 /);
        expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
          code: 'request_timeout',
          message: 'The request was not received in time',
          status: 408,
        });
      }
    } finally {
      clearInterval(trickle);
    }
  });
});
