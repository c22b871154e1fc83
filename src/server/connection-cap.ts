// Every open connection of a listener: at the cap the one that has made least progress makes room, and an answer the client stops taking is cut off.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionClosing } from '../observability/connection-closings.ts';
import type { ConnectionTurn } from './serve-in-turn.ts';

export type { ConnectionClosing } from '../observability/connection-closings.ts';

export interface ConnectionCapOptions {
  /** Open connections; at the cap the least progressed one is closed for the newcomer, which is refused only if every one is progressing. */
  maxConnections: number;
  /** An answer with bytes waiting that the client has taken none of for this long closes its connection. */
  sendTimeoutMs: number;
  /** The connection's turn (serve-in-turn.ts), by the socket requests arrive on. */
  turnOf(socket: Socket): ConnectionTurn | undefined;
  onClosed?: (reason: ConnectionClosing) => void;
}

export interface ConnectionCap {
  /** Connections open now. */
  open(): number;
}

interface OpenConnection {
  /** The TCP socket: what the cap closes. */
  tcp: Socket;
  /** Where requests arrive and answers are written: the TLS socket over `tcp`, or `tcp` itself. */
  http: Socket;
  /** Bytes of answers the kernel had taken at the last look. */
  flushed: number;
  /** Since when an answer's bytes wait without the client taking any (0: none wait). */
  waitingSince: number;
  openedAt: number;
}

/** A connection this young that has sent nothing goes last: its first bytes may be on their way (a probe, a new client). */
const FRESH_MS = 1000;
/** The progress check runs this often at most: a stalled answer is cut off within this much past `sendTimeoutMs`. */
const CHECK_EVERY_MS = 1000;

/**
 * Node's `maxConnections` refuses the newcomer, so half-sent requests and answers nobody reads would lock probes and clients out.
 * Here, least progress first: the oldest idle keep-alive connection, else the oldest with no request yet (a head under way, or
 * none sent for FRESH_MS), else the answer that has waited longest on its client, else the oldest newcomer that has sent nothing
 * yet; a connection whose answer is being prepared (all its bytes taken so far) is never closed. The bookkeeping is per
 * connection and one timer per listener: a request costs nothing here.
 */
export function capConnections(server: Server, options: ConnectionCapOptions): ConnectionCap {
  const { maxConnections, sendTimeoutMs, turnOf, onClosed } = options;
  const checkEveryMs = Math.max(10, Math.min(CHECK_EVERY_MS, Math.floor(sendTimeoutMs / 4)));
  // Insertion order is age order. Keyed by the peer's address and port: over TLS, `connection` gives the TCP socket and
  // `secureConnection` the TLS socket on it, which share that pair.
  const open = new Map<string, OpenConnection>();

  function close(peer: string, connection: OpenConnection, reason: ConnectionClosing): void {
    open.delete(peer);
    connection.http.destroy();
    connection.tcp.destroy();
    onClosed?.(reason);
  }

  function leastProgressed(now: number): [string, OpenConnection, ConnectionClosing] | undefined {
    let slowHead: [string, OpenConnection] | undefined;
    let stalled: [string, OpenConnection] | undefined;
    let stalledSince = Number.POSITIVE_INFINITY;
    let fresh: [string, OpenConnection] | undefined;
    for (const entry of open) {
      const connection = entry[1];
      const turn = turnOf(connection.http);
      if (turn === undefined) {
        // No request yet: a handshake or a head under way, or nothing sent in FRESH_MS; a newcomer's bytes may just not be read yet.
        if (connection.tcp.bytesRead > 0 || now - connection.openedAt >= FRESH_MS) slowHead ??= entry;
        else fresh ??= entry;
      } else if (!turn.busy) {
        // Answered, and nothing read since: a keep-alive connection waiting for its client.
        if (connection.http.bytesRead === turn.readWhenQuiet) return [entry[0], connection, 'idle'];
        slowHead ??= entry;
      } else if (connection.http.writableLength > 0) {
        // An answer with bytes its client has not taken: the one waiting longest (a check may not have seen it yet: waiting from now).
        const since = connection.waitingSince || now;
        if (since < stalledSince) {
          stalled = entry;
          stalledSince = since;
        }
      }
    }
    if (slowHead) return [...slowHead, 'slow_head'];
    if (stalled) return [...stalled, 'stalled_answer'];
    return fresh && [...fresh, 'slow_head'];
  }

  /** Notes each waiting answer's progress; one that made none for `sendTimeoutMs` closes its connection. */
  function checkProgress(): void {
    const now = performance.now();
    for (const [peer, connection] of open) {
      const pending = connection.http.writableLength;
      if (pending === 0) {
        connection.waitingSince = 0;
        continue;
      }
      // Bytes handed to the socket less those still in its buffer: what the kernel took, which only the client's reading frees room for.
      const flushed = connection.http.bytesWritten - pending;
      if (connection.waitingSince === 0 || flushed !== connection.flushed) {
        connection.flushed = flushed;
        connection.waitingSince = now;
      } else if (now - connection.waitingSince >= sendTimeoutMs) close(peer, connection, 'send_timeout');
    }
  }

  server.on('connection', function admitConnection(socket: Socket) {
    if (open.size >= maxConnections) {
      const evicted = leastProgressed(performance.now());
      if (evicted === undefined) {
        socket.destroy();
        return;
      }
      close(...evicted);
    }
    const peer = peerOf(socket);
    open.set(peer, { tcp: socket, http: socket, flushed: 0, waitingSince: 0, openedAt: performance.now() });
    socket.once('close', () => {
      // A newer connection from the same port may have taken the entry: it is not this one's to remove.
      if (open.get(peer)?.tcp === socket) open.delete(peer);
    });
  });
  server.on('secureConnection', (tls: Socket) => {
    const connection = open.get(peerOf(tls));
    if (connection) connection.http = tls;
  });
  let checking: NodeJS.Timeout | undefined;
  server.on('listening', () => {
    checking ??= setInterval(checkProgress, checkEveryMs).unref();
  });
  server.on('close', () => {
    clearInterval(checking);
    checking = undefined;
  });

  return { open: () => open.size };
}

/** A connection's peer, the same for a TCP socket and the TLS socket over it. */
function peerOf(socket: Socket): string {
  return `${socket.remoteAddress}|${socket.remotePort}`;
}
