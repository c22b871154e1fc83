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
 * Node's own `maxConnections` refuses the newcomer once the cap is reached: clients holding half-sent
 * requests would then lock the kubelet's probes and Prometheus out until their header timeout. Here the
 * newcomer is admitted and the oldest connection that is idle or still sending its head is closed
 * instead; a probe's connection is the newest and is answered within milliseconds, so a flood has to
 * open `maxConnections` connections in that time to close it. When every connection is being answered
 * the newcomer is refused (closed at once). Kept for the admin listener, whose connections are few: the
 * marking costs a listener per request, which the public listener's hot path does not pay.
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
