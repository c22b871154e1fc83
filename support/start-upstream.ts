// Real upstream HTTP servers for tests: the sample pet store, and scripted ones that misbehave on purpose.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { startSampleBackend, type SampleBackend } from '../src/demo/sample-backend.ts';

export function startPetStore(): Promise<SampleBackend> {
  return startSampleBackend({ record: true });
}

export interface ScriptedUpstream {
  baseUrl: string;
  port: number;
  requests: number;
  close(): Promise<void>;
}

/** An upstream whose every answer is written by the test. */
export async function startScriptedUpstream(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<ScriptedUpstream> {
  const state = { requests: 0 };
  const server: Server = createServer((req, res) => {
    state.requests++;
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    get requests() {
      return state.requests;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A port that refuses connections, for a backend or collector that is down: port 1 on loopback, which the system
 * never hands out for port 0 and only root may bind, so no other test's server can take it meanwhile (a port
 * bound and released could be). Checked: a machine that serves something on it stops the test with the reason.
 */
export async function refusedPort(): Promise<number> {
  const port = 1;
  if (!(await refuses(port))) throw new Error(`127.0.0.1:${port} does not refuse connections on this machine: the tests need it closed`);
  return port;
}

/** Below the system's ephemeral range (32768 up on Linux): a server on port 0 is never given one of these. */
const FRESH_PORTS = { from: 20_000, to: 32_767 };

/** Whether a connection to 127.0.0.1:`port` is refused: nothing listens there now. Binds nothing. */
function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/**
 * `count` different ports for programs that cannot listen on port 0 and report it (redis-server, Prometheus):
 * picked at random below the ephemeral range, so no server listening on port 0 takes one, and nothing listens
 * on them now. Two such programs may still draw the same port: their starters retry on another (startRedis).
 */
export async function freshPorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) {
    const port = FRESH_PORTS.from + Math.floor(Math.random() * (FRESH_PORTS.to - FRESH_PORTS.from + 1));
    if (!ports.has(port) && (await refuses(port))) ports.add(port);
  }
  return [...ports];
}

/**
 * A port nothing listens on: bound, then released. For the bench's processes only: in a test another test's
 * server may take it before it is used. Tests: servers on port 0 (read the port they got), refusedPort(), or
 * freshPort() with a retry for a program that cannot listen on port 0.
 */
export async function unusedPort(): Promise<number> {
  const [port] = await unusedPorts(1);
  return port!;
}

/** `count` different ports nothing listens on: bound together, so no two are the same, then released. */
export async function unusedPorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
  const ports = servers.map((server) => (server.address() as AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  return ports;
}
