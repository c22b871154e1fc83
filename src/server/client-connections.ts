// The one owner of a listener's client connections: admission at the cap, requests in turn, answers that must move, refusals and how they close.
import type { RequestListener, Server } from 'node:http';
import type { Socket } from 'node:net';
import { lingerBeforeClosing, type LingerBounds } from '../forks/lingering-close.ts';
import { capConnections, type ConnectionClosing } from './connection-cap.ts';
import { createClientErrorHandler, createConnectRefusal } from './client-error.ts';
import { serveInTurn } from './serve-in-turn.ts';

export type { ConnectionClosing } from './connection-cap.ts';

/** Every decision on a client connection's life is one of these settings (the table in docs/operations.md). */
export interface ClientConnectionOptions {
  /** Open connections; at the cap the least progressed is closed for the newcomer (connection-cap.ts). */
  maxConnections: number;
  /** Pipelined requests waiting behind the one answered; more closes the connection, and one waiting stops reading (serve-in-turn.ts). */
  maxQueuedPerConnection: number;
  /** An answer whose client takes none of its bytes for this long closes the connection (connection-cap.ts). */
  sendTimeoutMs: number;
  /** Which of the server's request events are admitted (the admin listener leaves `checkContinue` to Node). */
  requestEvents: ReadonlyArray<'request' | 'checkContinue' | 'checkExpectation'>;
  /** An X-Request-Id for each refusal of bytes that do not parse and of CONNECT; absent: none. */
  requestId?: () => string;
  /** Told of each connection the owner closes, and why. */
  onClosed?: (reason: ConnectionClosing) => void;
}

/**
 * A lingering close, as nginx's `lingering_close`: an answer sent before its request's body was read (413, 401, 415, 400 on a POST)
 * closes the connection, and a reset while the client still sends could discard the answer before the client reads it; so the
 * connection is half-closed after the answer and what the client sends is read and dropped for 2 s or 8 MiB past the answer at most
 * (a 5 MB body sent at once is then taken whole on loopback, whose buffers hold about 4 MB), then closed; the client's FIN ends it
 * sooner. The bytes are looked at every 100 ms: a client sending faster is read that much longer.
 */
export const LINGER: LingerBounds = { ms: 2000, bytes: 8 * 1024 * 1024, checkEveryMs: 100 };

export interface ClientConnections {
  /** Resolves when every accepted request has been answered: what the drain waits for. */
  idle(): Promise<void>;
  /** Connections open now. */
  open(): number;
}

/** Takes over `server`'s client connections and hands their requests, one at a time per connection, to `handler`. */
export function ownClientConnections(server: Server, handler: RequestListener, options: ClientConnectionOptions): ClientConnections {
  const admission = serveInTurn(handler, { maxQueuedPerConnection: options.maxQueuedPerConnection });
  const cap = capConnections(server, {
    maxConnections: options.maxConnections,
    sendTimeoutMs: options.sendTimeoutMs,
    turnOf: admission.turnOf,
    ...(options.onClosed ? { onClosed: options.onClosed } : {}),
  });
  for (const event of options.requestEvents) server.on(event, admission.listener);
  // Over TLS, `connection` gives the TCP socket, which no answer closes, and `secureConnection` the one requests arrive on.
  const lingerOnEarlyAnswers = (socket: Socket) => lingerBeforeClosing(socket, () => admission.answeringBeforeBody(socket), LINGER);
  server.on('connection', lingerOnEarlyAnswers);
  server.on('secureConnection', lingerOnEarlyAnswers);
  const refusals = options.requestId ? { requestId: options.requestId } : {};
  server.on('clientError', createClientErrorHandler(admission.answerInTurn, refusals));
  server.on('connect', createConnectRefusal(admission.answerInTurn, refusals));
  return { idle: admission.idle, open: cap.open };
}
