// Stops a listener without dropping accepted requests: stop accepting, let in-flight ones finish, then close.
import type { Server } from 'node:http';

export interface Drainable {
  /** Once draining, responses ask clients to close their connections. */
  draining(): boolean;
  /** Resolves when every accepted request has been answered, or the grace period has run out. */
  drain(gracePeriodMs: number): Promise<{ forced: boolean }>;
}

/**
 * Drains a server whose accepted requests settle `idle()`. `server.close()` closes the idle keep-alive
 * connections; busy ones are told `Connection: close` on their next response (see `draining`).
 */
export function makeDrainable(server: Server, idle: () => Promise<void>): Drainable {
  let draining = false;
  return {
    draining: () => draining,
    async drain(gracePeriodMs) {
      draining = true;
      server.close();
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'forced'>((resolve) => {
        timer = setTimeout(() => resolve('forced'), gracePeriodMs);
      });
      const outcome = await Promise.race([idle().then(() => 'drained' as const), graceOver]);
      clearTimeout(timer);
      server.closeAllConnections();
      return { forced: outcome === 'forced' };
    },
  };
}
