// The gateway's real listeners for raw-socket tests: the production handler on free ports, and its shutdown.
import type { RunningGateway } from '../../src/server/server.ts';
import type { UpstreamIdentity } from '../../src/identity/upstream-identity.ts';
import { buildTestGateway, type TestGateway } from './build-test-app.ts';
import { TCP, type EdgeTransport } from './edge-transport.ts';

export interface Edge {
  gateway: TestGateway;
  running: RunningGateway;
  close(): Promise<void>;
}

/**
 * A test gateway in front of `upstreamUrl`, listening on free ports (`overrides` laid over the config); its public listener speaks
 * `transport` (plain HTTP by default, HTTPS with the transport's certificate for TLS).
 */
export async function startEdge(
  upstreamUrl: string,
  overrides: Record<string, unknown> = {},
  identity?: UpstreamIdentity,
  transport: EdgeTransport = TCP,
): Promise<Edge> {
  const env = { PORT: '0', ADMIN_PORT: '0', ...transport.env() };
  const gateway = buildTestGateway({ upstreamUrl, env, overrides, ...(identity ? { identity } : {}) });
  const running = await gateway.listen();
  return {
    gateway,
    running,
    close: async () => {
      await running.shutdown('test over');
      gateway.close();
    },
  };
}
