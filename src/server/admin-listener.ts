// The admin listener's server: the public listener's protections, sized for probes, scrapes and admin calls.
import type { RequestListener, Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { TlsOptions } from 'node:tls';
import { refuse } from '../errors/send-error.ts';
import { createListenerServer } from '../http/node-http.ts';
import { requestIdOf } from '../pipeline/request-record.ts';
import { type ConnectionClosing, ownClientConnections } from './client-connections.ts';
import { targetRefusal, toOriginForm } from './request-target.ts';

/** The `listen.admin*` settings (src/config/schema.ts), and the admin app. */
export interface AdminListenerOptions {
  app: RequestListener;
  /** Open connections; at the cap the least progressed one is closed for the newcomer (connection-cap.ts). */
  maxConnections: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxQueuedPerConnection: number;
  sendTimeoutMs: number;
  /** Told each time a connection is closed to admit another, or for an answer its client stopped taking. */
  onClosed?: (reason: ConnectionClosing) => void;
  /** HTTPS with these (listenerTlsOptions); absent: plain HTTP. */
  tls?: TlsOptions;
}

/**
 * Without these, two clients holding twenty thousand half-sent requests on the admin port used every
 * file descriptor of the process, and the public listener's with them. Every answer carries an
 * X-Request-Id (the client's when well-formed), refusals of bytes that do not parse and of CONNECT included.
 */
export function createAdminServer(options: AdminListenerOptions): Server {
  const server = createListenerServer(
    {
      keepAliveTimeout: options.keepAliveTimeoutMs,
      headersTimeout: options.headersTimeoutMs,
      requestTimeout: options.requestTimeoutMs,
      // How often Node checks the two timeouts above (default 30 s), as on the public listener.
      connectionsCheckingInterval: 1000,
      // Node's refusal of a missing Host is a bare 400; targetRefusal answers it with an Error body.
      requireHostHeader: false,
    },
    // A handshake is part of sending the headers: it gets no longer than they do (Node's default is two minutes).
    options.tls && { ...options.tls, handshakeTimeout: options.headersTimeoutMs },
  );
  const { app } = options;
  // checkContinue is left to Node (it sends 100 Continue, then `request`); any other expectation is refused by targetRefusal.
  ownClientConnections(
    server,
    function adminEdge(req, res) {
      res.setHeader('X-Request-Id', requestIdOf(req.headers['x-request-id']));
      toOriginForm(req);
      const refusal = targetRefusal(req as Parameters<typeof targetRefusal>[0]);
      if (refusal === undefined) app(req, res);
      else refuse(req, res, refusal);
    },
    {
      maxConnections: options.maxConnections,
      maxQueuedPerConnection: options.maxQueuedPerConnection,
      sendTimeoutMs: options.sendTimeoutMs,
      requestEvents: ['request', 'checkExpectation'],
      requestId: randomUUID,
      ...(options.onClosed ? { onClosed: options.onClosed } : {}),
    },
  );
  return server;
}
