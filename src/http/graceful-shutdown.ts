// Stops a listener without dropping accepted requests: stop accepting, let in-flight ones finish, then close.
import type { Server } from 'node:http';

export interface Drainable {
  /** Once draining, responses ask clients to close their connections. */
  draining(): boolean;
  /** Resolves when every accepted request has been answered, or the grace period has run out. */
  drain(gracePeriodMs: number): Promise<{ forced: boolean }>;
}

/** Drains a server whose accepted requests are counted by `inFlight`. */
export function makeDrainable(server: Server, inFlight: () => number): Drainable {
  let draining = false;
  return {
    draining: () => draining,
    drain(gracePeriodMs) {
      draining = true;
      return new Promise((resolve) => {
        const deadline = Date.now() + gracePeriodMs;
        server.close();
        const poll = setInterval(() => {
          server.closeIdleConnections();
          if (inFlight() === 0) {
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
