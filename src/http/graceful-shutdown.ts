// Stops a listener without dropping accepted requests: stop accepting, let in-flight ones finish, then close.
import type { Server } from 'node:http';

export interface DrainableServer {
  server: Server;
  /** Requests accepted and not yet answered. */
  inFlight(): number;
  /** Resolves when every accepted request has been answered, or the grace period has run out. */
  drain(gracePeriodMs: number): Promise<{ forced: boolean }>;
}

/** Counts in-flight requests on a server and, once draining, asks clients to close their connections. */
export function makeDrainable(server: Server): DrainableServer {
  let inFlight = 0;
  let draining = false;
  server.on('request', (_req, res) => {
    inFlight++;
    // A keep-alive client would otherwise send its next request to a listener that is going away.
    if (draining) res.setHeader('Connection', 'close');
    res.once('close', () => {
      inFlight--;
    });
  });

  return {
    server,
    inFlight: () => inFlight,
    drain(gracePeriodMs) {
      draining = true;
      return new Promise((resolve) => {
        const deadline = Date.now() + gracePeriodMs;
        server.close();
        const poll = setInterval(() => {
          server.closeIdleConnections();
          if (inFlight === 0) {
            clearInterval(poll);
            server.closeAllConnections();
            resolve({ forced: false });
          } else if (Date.now() >= deadline) {
            clearInterval(poll);
            server.closeAllConnections();
            resolve({ forced: true });
          }
        }, 25);
        server.closeIdleConnections();
      });
    },
  };
}
