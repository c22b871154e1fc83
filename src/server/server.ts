// Starts the public and admin listeners around an app, and shuts both down gracefully on SIGTERM.
import type { RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { createAdminApp, type AdminAppOptions } from '../admin/admin-app.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { createAdminServer } from './admin-listener.ts';
import { type ConnectionClosing, ownClientConnections } from './client-connections.ts';
import { makeDrainable } from './graceful-shutdown.ts';
import type { AppMessages } from '../forks/app-messages.ts';
import { answerPlainHttp, plainHttpAnswer } from '../forks/plain-http-answer.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { createListenerServer, secureContextOf } from '../http/node-http.ts';
import type { HandshakeFailureReason } from '../observability/tls-metrics.ts';
import { handshakeFailureReason, type ListenerCertificates, type ListenerRole, listenerTlsOptions } from './listener-tls.ts';
import type { RequestTracker } from './request-tracker.ts';
import { toOriginForm } from './request-target.ts';

export interface RunningGateway {
  port: number;
  adminPort: number;
  /** Readiness turns false, listeners drain and close, then `onClosed` resources are released. */
  shutdown(reason: string): Promise<void>;
}

/** What a listener needs of a built gateway (src/wiring/compose.ts). */
export interface ListenableGateway {
  config: GatewayConfig;
  handler: RequestListener;
  /** The requests `handler` was handed and has not answered yet (the request tracker's count). */
  tracker: Pick<RequestTracker, 'inFlight'>;
  /** The classes the public listener makes requests and responses with (node:http's own when absent). */
  messageClasses?: AppMessages['classes'];
  admin: Omit<AdminAppOptions, 'isAcceptingTraffic'>;
  /** Told each time a listener closes a connection to admit another at its cap, or for an answer its client stopped taking (counted). */
  onConnectionClosed?: (listener: ListenerRole, reason: ConnectionClosing) => void;
  /** The certificate pairs of the listeners that speak TLS (src/server/listener-tls.ts); absent or empty: plain HTTP. */
  certificates?: ListenerCertificates;
  /** Told each client handshake a TLS listener did not complete (counted by reason). */
  onHandshakeFailed?: (listener: ListenerRole, reason: HandshakeFailureReason) => void;
}

export interface StartOptions {
  gateway: ListenableGateway;
  logger: Logger;
  /** Told as shutdown begins, before readiness turns false (what would change the gateway on its own stops here). */
  onDraining?: () => void;
  /** Released after the listeners have closed (upstream pool, Redis connections...). */
  onClosed?: () => Promise<void> | void;
}

/** What a TLS listener answers a plain HTTP request with, in the clear (nginx: "plain HTTP request was sent to HTTPS port"). */
const PLAIN_HTTP_REFUSAL = ((error) => ({ status: error.status, code: error.code, body: JSON.stringify(error.toBody()) }))(
  new GatewayError('invalid_request', 'A plain HTTP request was sent to the HTTPS port: use https://'),
);

/** Address errors that are the host's (the others are the port's). */
const HOST_REFUSALS: ReadonlySet<string> = new Set(['EADDRNOTAVAIL', 'ENOTFOUND']);

/** Why a listener could not open, from the socket error code. */
const LISTEN_REFUSALS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'is already in use (another process listens there)',
  EACCES: 'is not allowed for this user (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'is not an address of this machine',
  ENOTFOUND: 'names a host that does not resolve',
};

/** A listener could not open its address; the message names the setting and the address, and is the whole story. */
export class ListenError extends Error {
  override name = 'ListenError';
}

/** The settings an operator changes for a listener: its port's, and its host's where there is one. */
export type ListenSettings = string | { port: string; host: string };

/** Opens `server` on host:port; a refused address rejects with a ListenError naming the setting to change (`PORT (listen.port)`...). */
export function listen(server: Server, port: number, host: string, settings: ListenSettings): Promise<number> {
  return new Promise((resolve, reject) => {
    const refused = (error: NodeJS.ErrnoException) => {
      const why = error.code === undefined ? undefined : LISTEN_REFUSALS[error.code];
      const setting = typeof settings === 'string' ? settings : HOST_REFUSALS.has(error.code ?? '') ? settings.host : settings.port;
      // An error other than these is not the operator's address: it keeps its stack.
      reject(why ? new ListenError(`${setting}: ${formatAddress(host, port)} ${why}`, { cause: error }) : error);
    };
    server.once('error', refused);
    server.listen(port, host, () => {
      server.off('error', refused);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export async function startGateway(options: StartOptions): Promise<RunningGateway> {
  const { logger, gateway } = options;
  const { config } = gateway;
  let accepting = true;
  const pairs = gateway.certificates?.pairs ?? {};
  const publicServer = createListenerServer(
    {
      keepAliveTimeout: config.listen.keepAliveTimeoutMs,
      headersTimeout: config.listen.headersTimeoutMs,
      requestTimeout: config.listen.requestTimeoutMs,
      // How often Node checks the two timeouts above (default 30 s): a slow client is cut off within a second of its deadline.
      connectionsCheckingInterval: 1000,
      // The app refuses a request without Host with an Error body; Node's own refusal has none.
      requireHostHeader: false,
      ...gateway.messageClasses,
    },
    // A handshake is part of sending the headers: it gets no longer than they do (Node's default is two minutes).
    pairs.listener && { ...listenerTlsOptions(pairs.listener), handshakeTimeout: config.listen.headersTimeoutMs },
  );
  // A reload's new pair is taken up by the listener's new connections (its open ones keep theirs).
  const publicTls = secureContextOf(publicServer);
  if (publicTls) gateway.certificates?.attach('listener', publicTls);
  const { onConnectionClosed } = gateway;
  const connections = ownClientConnections(
    publicServer,
    (req, res) => {
      // A keep-alive client would otherwise send its next request to a listener that is going away.
      if (drainable.draining()) res.setHeader('Connection', 'close');
      toOriginForm(req);
      gateway.handler(req, res);
    },
    {
      maxConnections: config.listen.maxConnections,
      maxQueuedPerConnection: config.listen.maxQueuedPerConnection,
      sendTimeoutMs: config.listen.sendTimeoutMs,
      // Expect: 100-continue and other expectations reach the app too, which decides before inviting a body.
      requestEvents: ['request', 'checkContinue', 'checkExpectation'],
      ...(onConnectionClosed ? { onClosed: (reason: ConnectionClosing) => onConnectionClosed('listener', reason) } : {}),
    },
  );
  const drainable = makeDrainable(publicServer, connections.idle);
  const adminServer = createAdminServer({
    app: createAdminApp({ ...gateway.admin, isAcceptingTraffic: () => accepting }),
    maxConnections: config.listen.adminMaxConnections,
    headersTimeoutMs: config.listen.adminHeadersTimeoutMs,
    requestTimeoutMs: config.listen.adminRequestTimeoutMs,
    keepAliveTimeoutMs: config.listen.adminKeepAliveTimeoutMs,
    maxQueuedPerConnection: config.listen.maxQueuedPerConnection,
    sendTimeoutMs: config.listen.sendTimeoutMs,
    ...(onConnectionClosed ? { onClosed: (reason: ConnectionClosing) => onConnectionClosed('admin', reason) } : {}),
    ...(pairs.admin ? { tls: listenerTlsOptions(pairs.admin) } : {}),
  });
  const adminTls = secureContextOf(adminServer);
  if (adminTls) gateway.certificates?.attach('admin', adminTls);
  const plainHttp = plainHttpAnswer(PLAIN_HTTP_REFUSAL);
  for (const [listener, server, secure] of [
    ['listener', publicServer, publicTls],
    ['admin', adminServer, adminTls],
  ] as const) {
    if (!secure) continue;
    // Counted only: node:https hands the failure to `clientError` too, which closes the socket (client-error.ts).
    server.on('tlsClientError', (error: Error) => gateway.onHandshakeFailed?.(listener, handshakeFailureReason(error)));
    answerPlainHttp(server, plainHttp);
  }
  const port = await listen(publicServer, config.listen.port, config.listen.host, { port: 'PORT (listen.port)', host: 'listen.host' });
  const adminPort = await listen(adminServer, config.listen.adminPort, config.listen.adminHost, {
    port: 'ADMIN_PORT (listen.adminPort)',
    host: 'ADMIN_HOST (listen.adminHost)',
  }).catch((error: unknown) => {
    // The public listener is open: closed again, so a caller that survives the failure (a test, the demo) is not left holding its port.
    publicServer.close();
    throw error;
  });
  logger.info(
    {
      host: config.listen.host,
      port,
      tls: pairs.listener !== undefined,
      adminHost: config.listen.adminHost,
      adminPort,
      adminTls: pairs.admin !== undefined,
      environment: config.environment,
      upstream: config.upstreamBaseUrl,
    },
    'gateway listening',
  );

  let shuttingDown: Promise<void> | undefined;
  async function shutdown(reason: string): Promise<void> {
    options.onDraining?.();
    accepting = false;
    logger.info({ reason, unanswered: gateway.tracker.inFlight() }, 'shutting down: readiness is now false');
    await new Promise((resolve) => setTimeout(resolve, config.shutdown.drainDelayMs));
    const { forced } = await drainable.drain(config.shutdown.gracePeriodMs);
    if (forced) logger.warn({ gracePeriodMs: config.shutdown.gracePeriodMs }, 'grace period over: remaining connections closed');
    adminServer.closeAllConnections();
    await new Promise<void>((resolve) => adminServer.close(() => resolve()));
    await options.onClosed?.();
    logger.info('gateway stopped');
  }

  return {
    port,
    adminPort,
    shutdown: (reason) => (shuttingDown ??= shutdown(reason)),
  };
}
