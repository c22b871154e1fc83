// Whether a TCP connection to an upstream opens: the upstream's readiness probe.
import { connect } from 'node:net';

/** Reported by /readyz and the dependency_up gauge, never critical: the breaker answers for a down upstream. */
export function upstreamReachable(baseUrl: string, timeoutMs = 1000): Promise<boolean> {
  const url = new URL(baseUrl);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname, port, timeout: timeoutMs });
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => finish(true));
    socket.once('timeout', () => finish(false));
    socket.once('error', () => finish(false));
  });
}
