// serveInTurn: a connection's pipelined requests are served one at a time, and a long queue on one connection does not hold others back.
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { serveInTurn } from '../../../src/server/serve-in-turn.ts';

let server: Server | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A server whose handler answers at once (as a refusal does) and records the order requests were served in. */
async function answeringServer(served: string[]): Promise<number> {
  const admission = serveInTurn(
    (req, res) => {
      served.push(req.url ?? '');
      res.end('ok');
    },
    { maxQueuedPerConnection: 1000 },
  );
  server = createServer(admission.listener);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

async function connected(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

/** Resolves once `socket` has received `count` responses (counted by their status lines). */
function responses(socket: Socket, count: number): Promise<void> {
  let text = '';
  return new Promise((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if ((text.match(/HTTP\/1\.1 200 OK\r\n/g) ?? []).length >= count) resolve();
    });
  });
}

describe('serveInTurn', () => {
  it('serves pipelined requests in the order they were sent', async () => {
    const served: string[] = [];
    const socket = await connected(await answeringServer(served));
    const answered = responses(socket, 3);
    socket.write('GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n');
    await answered;
    expect(served).toEqual(['/1', '/2', '/3']);
  });

  it("reads another connection's request while a pipelined flood on one connection is being answered", async () => {
    const served: string[] = [];
    const port = await answeringServer(served);
    const flooding = await connected(port);
    const other = await connected(port);
    const flood = Array.from({ length: 300 }, (_, n) => `GET /flood/${n} HTTP/1.1\r\nHost: x\r\n\r\n`).join('');
    const floodAnswered = responses(flooding, 300);
    const otherAnswered = responses(other, 1);
    flooding.write(flood);
    other.write('GET /other HTTP/1.1\r\nHost: x\r\n\r\n');
    await Promise.all([floodAnswered, otherAnswered]);
    expect(served).toHaveLength(301);
    // Served between two of the flood's requests, not after all of them.
    expect(served.indexOf('/other')).toBeLessThan(served.indexOf('/flood/299'));
    expect(served.filter((url) => url.startsWith('/flood/'))).toEqual(Array.from({ length: 300 }, (_, n) => `/flood/${n}`));
  });
});

/** A connection as serveInTurn sees it: pause/resume and whether it has ended. */
class FakeSocket extends EventEmitter {
  destroyed = false;
  writableEnded = false;
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }
}

function exchange(socket: FakeSocket): [IncomingMessage, ServerResponse] {
  const res = Object.assign(new EventEmitter(), { shouldKeepAlive: true, headersSent: false }) as unknown as ServerResponse;
  // `res` on the request too, so a test can close the response of a request its handler was given.
  const req = Object.assign(new EventEmitter(), { socket, complete: true, url: '/', res }) as unknown as IncomingMessage;
  return [req, res];
}

describe('serveInTurn between two turns (a response closed, the next waiting request not yet served)', () => {
  function twoPipelined() {
    const handled: IncomingMessage[] = [];
    const admission = serveInTurn((req) => void handled.push(req), { maxQueuedPerConnection: 10 });
    const socket = new FakeSocket();
    const first = exchange(socket);
    const second = exchange(socket);
    admission.listener(...first);
    admission.listener(...second);
    first[1].emit('close');
    return { admission, socket, handled, second };
  }

  it("answers a parser error only after the waiting request, never as if it were that request's answer", async () => {
    const { admission, socket, handled } = twoPipelined();
    const refusals: string[] = [];
    expect(admission.answerInTurn(socket as unknown as Socket, () => refusals.push('400'))).toBe(true);
    expect(refusals).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    (handled[1] as unknown as { res: EventEmitter }).res.emit('close');
    expect(refusals).toEqual(['400']);
  });

  it('heeds only the first report of a parser error (Node reports one for every chunk read after it)', async () => {
    const { admission, socket, handled } = twoPipelined();
    const refusals: string[] = [];
    for (let i = 0; i < 3; i++) admission.answerInTurn(socket as unknown as Socket, () => refusals.push(`400 #${i}`));
    await new Promise((resolve) => setImmediate(resolve));
    (handled[1] as unknown as { res: EventEmitter }).res.emit('close');
    expect(refusals).toEqual(['400 #0']);
  });

  it('serves the waiting request on the next turn', async () => {
    const { admission, handled, second } = twoPipelined();
    expect(handled).toHaveLength(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(handled).toEqual([expect.anything(), second[0]]);
    expect(admission.busyConnections()).toBe(1);
  });

  it('drops the waiting request if the connection ended meanwhile, and counts the connection idle', async () => {
    const { admission, socket, handled } = twoPipelined();
    socket.writableEnded = true;
    await new Promise((resolve) => setImmediate(resolve));
    expect(handled).toHaveLength(1);
    expect(admission.busyConnections()).toBe(0);
    await admission.idle();
  });
});
