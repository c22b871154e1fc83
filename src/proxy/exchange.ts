// The upstream exchange as one function: send the request, relay the answer, resolve with what happened.
// Built on undici's dispatcher: its handler callbacks are the exchange's events, with no stream or
// ClientRequest between the upstream's socket and the client's response (what that saves:
// docs/decisions/0002-exchange-on-undici.md).
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { buildConnector, Pool } from 'undici';
import { TlsAlerts } from '../forks/tls-alerts.ts';
import { watchStrayBytes } from '../forks/upstream-stray-bytes.ts';
import { monotonicMs } from '../time/monotonic.ts';
import { createAnswerBinding } from './answer-binding.ts';
import { AnswerCheckHandler } from './answer-check-handler.ts';
import { AnswerTapHandler } from './answer-tap-handler.ts';
import type {
  ChainHandler,
  ExchangeFacts,
  ExchangeObserver,
  ExchangeOutcome,
  Upstream,
  UpstreamOptions,
  UpstreamOrigin,
  UpstreamRequest,
} from './exchange-types.ts';
import { RelayHandler } from './relay-handler.ts';
import { RequestIdHandler } from './request-id-handler.ts';

export type {
  AnswerTap,
  Exchange,
  ExchangeFacts,
  ExchangeObserver,
  ExchangeOutcome,
  Upstream,
  UpstreamOptions,
  UpstreamOrigin,
  UpstreamPoolStats,
  UpstreamRequest,
  UpstreamSlice,
} from './exchange-types.ts';

/**
 * For an https:// upstream: undici's own connector with the configured TLS, telling `onServerCertificate` what each new
 * connection's peer presented. HTTP/2 is offered through ALPN only when `upstream.http2` says so: each answer then has a stream
 * of its own, and a stray response has nowhere to go; otherwise HTTP/1.1 alone.
 */
function tlsConnector(target: URL, options: UpstreamOptions, alerts: TlsAlerts): buildConnector.connector {
  // Verification asked for last, whatever `tls` holds: NODE_TLS_REJECT_UNAUTHORIZED=0 would otherwise switch it off.
  const connect = buildConnector({ ...options.tls, timeout: options.connectTimeoutMs, allowH2: options.http2 === true, rejectUnauthorized: true });
  const seen = options.onServerCertificate;
  // undici names the server from each request's Host header, and that name goes before the connector's option: the configured one replaces it here.
  const servername = options.tls?.servername;
  return function connectWatchingTls(connection, callback) {
    connect(servername === undefined ? connection : { ...connection, servername }, (...result) => {
      const [error, socket] = result;
      if (error === null) {
        // An https:// connection is a TLSSocket (buildConnector's `protocol` is the pool's origin's).
        const tlsSocket = socket as TLSSocket;
        alerts.watch(tlsSocket);
        // An HTTP/2 connection's streams cannot be confused; its bytes are the session's to read.
        if (tlsSocket.alpnProtocol !== 'h2') watchStrayBytes(tlsSocket, options.onConnectionRetired);
        const validTo = seen && tlsSocket.getPeerCertificate().valid_to;
        if (validTo) seen(target.origin, new Date(validTo));
      }
      callback(...result);
    });
  };
}

/** For an http:// upstream: undici's own connector, each new connection watched for bytes outside an answer. */
function plainConnector(options: UpstreamOptions): buildConnector.connector {
  const connect = buildConnector({ timeout: options.connectTimeoutMs });
  return function connectWatchingStrayBytes(connection, callback) {
    connect(connection, (...result) => {
      const [error, socket] = result;
      // An http:// connection is a net.Socket.
      if (error === null) watchStrayBytes(socket as Socket, options.onConnectionRetired);
      callback(...result);
    });
  };
}

export function createUpstream(options: UpstreamOptions): Upstream {
  const target = new URL(options.baseUrl);
  const alerts = new TlsAlerts();
  const relayOptions = { idleTimeoutMs: options.idleTimeoutMs, totalTimeoutMs: options.totalTimeoutMs, explainFailure: alerts.explain };
  const answerBinding = createAnswerBinding(options.requestIdEcho ?? 'auto');
  const pool = new Pool(target.origin, {
    connections: options.maxSockets,
    connectTimeout: options.connectTimeoutMs,
    allowH2: options.http2 === true && target.protocol === 'https:',
    connect: target.protocol === 'https:' ? tlsConnector(target, options, alerts) : plainConnector(options),
    // The upstream's silences are timed by the relay's native timer (ExchangeClock), which dies young: undici's "fast timers"
    // live until its sweep every half second, so each request's timer was promoted into the old generation.
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const basePath = target.pathname.replace(/\/$/, '');
  const origin: UpstreamOrigin = { hostname: target.hostname, port: Number(target.port || (target.protocol === 'https:' ? 443 : 80)), origin: target.origin };

  function exchange(request: UpstreamRequest, res: ServerResponse, record?: ExchangeFacts): Promise<ExchangeOutcome> {
    const path = basePath + request.path;
    let settled: ExchangeObserver | undefined;
    if (record !== undefined) {
      record.exchangeStartMs = monotonicMs();
      record.exchangeMethod = request.method;
      record.exchangeOrigin = origin;
      record.exchangePath = path;
      settled = (slice) => {
        record.exchangeEndMs = monotonicMs();
        record.upstream = slice;
      };
    }
    // The client left while an earlier stage was waiting (Redis, the breaker): nothing to send, nothing to
    // count (the exchange's facts end with the request).
    if (res.destroyed) return Promise.resolve({ status: 0, upstreamMs: 0, clientClosed: true });
    return new Promise((resolve, reject) => {
      // The answer's chain, outermost first: the request-id check, the answer check, the relay; a handler not configured for this
      // request is not in it (requestIdEcho off; an answer not checked, as most are under report's sample).
      const relay = new RelayHandler(res, relayOptions, request, resolve, reject, settled, record);
      let handler: ChainHandler = request.check === undefined ? relay : new AnswerCheckHandler(relay, request.check, res);
      // The proxy stage always sets the id (upstreamHeaders), as a string.
      if (answerBinding !== undefined) handler = new RequestIdHandler(handler, answerBinding, request.headers['x-request-id'] as string);
      // Outermost: a shadowed request's tap sees the answer as the upstream sent it (src/shadow compares it with staging's).
      if (request.tap !== undefined) handler = new AnswerTapHandler(handler, request.tap);
      pool.dispatch(
        {
          method: request.method,
          path,
          // undici's header type is its own; node:http's OutgoingHttpHeaders values are strings here (upstreamHeaders).
          headers: request.headers as Record<string, string | string[]>,
          body: request.body ?? null,
          // No `reset: false`: undici closes the connection after a HEAD, so a body a backend wrongly writes
          // after its HEAD answer is never read as the answer to the next request on the connection.
        },
        handler,
      );
    });
  }

  return {
    exchange,
    host: target.host,
    close: () => pool.destroy(),
    stats() {
      const { connected, free, running, queued } = pool.stats;
      return { connected, free, running, queued };
    },
  };
}
