// The connection cap (client-connections.ts): at the cap the least progressed connection makes room; one being answered never does.
import { once } from 'node:events';
import type { Server, ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { connect as connectTls, type TlsOptions } from 'node:tls';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { readCertificatePair } from '../../../src/http/certificates.ts';
import { createListenerServer } from '../../../src/http/node-http.ts';
import { type ConnectionClosing, ownClientConnections } from '../../../src/server/client-connections.ts';
import { listenerTlsOptions } from '../../../src/server/listener-tls.ts';
import { createTestPki } from '../../helpers/test-certificates.ts';

const pki = createTestPki();
afterAll(() => pki.remove());
const authority = pki.authority('ca');
const leaf = authority.issue({ name: 'listener' });
const TLS = listenerTlsOptions(readCertificatePair({ certFile: leaf.certFile, keyFile: leaf.keyFile, certSetting: 'cert', keySetting: 'key' }));

let server: Server | undefined;
const sockets: Socket[] = [];
/** Responses the server holds open: their connections are being answered. */
const held: ServerResponse[] = [];
afterEach(async () => {
  for (const res of held.splice(0)) res.end();
  for (const socket of sockets.splice(0)) socket.destroy();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A server capped at `max` whose every request is held, unanswered, until the test ends. */
async function holdingServer(max: number, tls?: TlsOptions): Promise<{ port: number; evictions: () => number; reasons: ConnectionClosing[] }> {
  const reasons: ConnectionClosing[] = [];
  server = createListenerServer({}, tls);
  ownClientConnections(server, (req, res) => (req.url === '/done' ? res.end() : void held.push(res)), {
    maxConnections: max,
    maxQueuedPerConnection: 16,
    sendTimeoutMs: 30_000,
    requestEvents: ['request'],
    onClosed: (reason) => void reasons.push(reason),
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, evictions: () => reasons.length, reasons };
}

/** A connection that has written `bytes`; resolves once the server has seen it (its request, or its connection). */
async function open(port: number, bytes: string, tls = false): Promise<{ socket: Socket; closed: Promise<unknown> }> {
  const socket = tls ? connectTls({ port, host: '127.0.0.1', servername: 'localhost', ca: authority.cert }) : connect(port, '127.0.0.1');
  socket.on('error', () => {});
  sockets.push(socket);
  const closed = once(socket, 'close').catch(() => undefined);
  await once(socket, tls ? 'secureConnect' : 'connect');
  socket.write(bytes);
  // Bytes the server has not read yet would make the connection idle to it, the first to go.
  if (bytes === HALF) await new Promise((resolve) => setTimeout(resolve, 50));
  return { socket, closed };
}

const WHOLE = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
const HALF = 'GET / HTTP/1.1\r\nHo';

describe('the connection cap', () => {
  it('closes an idle keep-alive connection before an older half-sent one, and counts why', async () => {
    const { port, reasons } = await holdingServer(2);
    const half = await open(port, HALF);
    const idle = await open(port, 'GET /done HTTP/1.1\r\nHost: x\r\n\r\n');
    await once(idle.socket, 'data');
    await open(port, HALF);
    await idle.closed;
    expect(reasons).toEqual(['idle']);
    expect(half.socket.destroyed).toBe(false);
  });

  it('closes the oldest half-sent connection to admit a newcomer, never one being answered', async () => {
    const { port, evictions } = await holdingServer(3);
    const answering = await open(port, WHOLE);
    await new Promise((resolve) => server!.once('request', resolve));
    const oldestHalf = await open(port, HALF);
    await open(port, HALF);
    const newcomer = await open(port, HALF);
    await oldestHalf.closed;
    expect(evictions()).toBe(1);
    expect(answering.socket.destroyed).toBe(false);
    expect(newcomer.socket.destroyed).toBe(false);
  });

  it('refuses the newcomer when every connection is being answered', async () => {
    const { port, evictions } = await holdingServer(2);
    for (let i = 0; i < 2; i++) {
      await open(port, WHOLE);
      await new Promise((resolve) => server!.once('request', resolve));
    }
    const newcomer = await open(port, WHOLE);
    await newcomer.closed;
    expect(evictions()).toBe(0);
    expect(sockets.slice(0, 2).every((socket) => !socket.destroyed)).toBe(true);
  });

  it('over TLS, knows a connection being answered by its TCP socket, and never evicts it', async () => {
    const { port, evictions } = await holdingServer(2, TLS);
    const answering = await open(port, WHOLE, true);
    await new Promise((resolve) => server!.once('request', resolve));
    const half = await open(port, HALF, true);
    const newcomer = await open(port, HALF, true);
    await half.closed;
    expect(evictions()).toBe(1);
    expect(answering.socket.destroyed).toBe(false);
    expect(newcomer.socket.destroyed).toBe(false);
  });
});
