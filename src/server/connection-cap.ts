// Caps a listener's open connections; at the cap, the oldest connection that is not being answered makes room for the newcomer.
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionCap {
  /** Marks `socket` as being answered until `res` closes: such a connection is never evicted. */
  hold(socket: Socket, res: ServerResponse): void;
  /** Connections open now. */
  open(): number;
}

/**
 * Node's `maxConnections` refuses the newcomer, so half-sent requests would lock probes and Prometheus out until their header
 * timeout. Here the oldest connection not being answered is closed instead (the newcomer is refused only when all are answered).
 * For the admin listener only: the marking costs a listener per request, which the public hot path does not pay.
 */
export function capConnections(server: Server, maxConnections: number, onEvicted?: () => void): ConnectionCap {
  // Insertion order is age order: the first idle one found is the oldest.
  const open = new Set<Socket>();
  const answering = new WeakSet<Socket>();

  function oldestIdle(): Socket | undefined {
    for (const socket of open) if (!answering.has(socket)) return socket;
    return undefined;
  }

  server.on('connection', function admitConnection(socket: Socket) {
    if (open.size >= maxConnections) {
      const evicted = oldestIdle();
      if (evicted === undefined) {
        socket.destroy();
        return;
      }
      open.delete(evicted);
      evicted.destroy();
      onEvicted?.();
    }
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });

  return {
    hold(socket, res) {
      answering.add(socket);
      res.once('close', () => answering.delete(socket));
    },
    open: () => open.size,
  };
}
