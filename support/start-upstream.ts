// Real upstream HTTP servers for tests: the sample pet store, and scripted ones that misbehave on purpose.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
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

/** A port nothing listens on: bound, then released. */
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
