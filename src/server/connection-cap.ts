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
  // Insertion order is age order: the first idle one found is the oldest. Keyed by the peer's address and port:
  // over TLS, `connection` gives the TCP socket and a request the TLS socket on it, which share that pair.
  const open = new Map<string, Socket>();
  const answering = new Set<string>();

  function oldestIdle(): [string, Socket] | undefined {
    for (const entry of open) if (!answering.has(entry[0])) return entry;
    return undefined;
  }

  server.on('connection', function admitConnection(socket: Socket) {
    if (open.size >= maxConnections) {
      const evicted = oldestIdle();
      if (evicted === undefined) {
        socket.destroy();
        return;
      }
      open.delete(evicted[0]);
      evicted[1].destroy();
      onEvicted?.();
    }
    const peer = peerOf(socket);
    open.set(peer, socket);
    socket.once('close', () => {
      // A newer connection from the same port may have taken the entry: it is not this one's to remove.
      if (open.get(peer) !== socket) return;
      open.delete(peer);
      answering.delete(peer);
    });
  });

  return {
    hold(socket, res) {
      const peer = peerOf(socket);
      answering.add(peer);
      res.once('close', () => answering.delete(peer));
    },
    open: () => open.size,
  };
}

/** A connection's peer, the same for a TCP socket and the TLS socket over it. */
function peerOf(socket: Socket): string {
  return `${socket.remoteAddress}|${socket.remotePort}`;
}
