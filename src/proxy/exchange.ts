// The upstream exchange as one function: send the request, relay the answer, resolve with what happened.
// Built on undici's dispatcher: its handler callbacks are the exchange's events, with no stream or
// ClientRequest between the upstream's socket and the client's response (what that saves:
// docs/decisions/0002-exchange-on-undici.md).
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { buildConnector, Pool } from 'undici';
import { monotonicMs } from '../time/monotonic.ts';
import { RelayHandler } from './relay-handler.ts';
import type { UpstreamFailureKind } from './upstream-failure.ts';
import type { RelayPolicy } from './upstream-response.ts';
import type { AnswerCheck, AnswerVerdict } from './answer-check.ts';
import type { UpstreamTlsOptions } from './upstream-tls.ts';
import { TlsAlerts } from './tls-alerts.ts';
import { createAnswerBinding, type RequestIdEcho } from './answer-binding.ts';

export interface UpstreamOptions {
  /** The upstream base address, ending in /v1. */
  baseUrl: string;
  /** Nothing from the upstream for this long: 504 (headers_timeout until its head arrived, idle_timeout within its body). */
  idleTimeoutMs: number;
  /** A new upstream connection must be established within this. */
  connectTimeoutMs: number;
  /** The whole exchange, to the last byte of the response, must finish within this. */
  totalTimeoutMs: number;
  /** Connections to the upstream at most; further requests wait for one. */
  maxSockets: number;
  /** What connections to an https:// upstream are made with (readUpstreamTls); absent: Node's defaults. Unused for http://. */
  tls?: UpstreamTlsOptions;
  /** Whether an answer must carry the X-Request-Id sent with its request (config `upstream.requestIdEcho`); absent: `auto`. */
  requestIdEcho?: RequestIdEcho;
  /** Told the notAfter of the certificate an https:// upstream presents on each new connection (the expiry metric). */
  onServerCertificate?: (origin: string, notAfter: Date) => void;
}

export interface UpstreamRequest {
  method: string;
  /** Path and query below the base address, e.g. `/pets?limit=2`. */
  path: string;
  headers: OutgoingHttpHeaders;
  /** Sent with the Content-Length the headers declare. */
  body: Buffer | undefined;
  /** Which of the upstream's headers the client may see, and the secret never to echo. */
  relay: RelayPolicy;
  /** How the answer is checked against the document; undefined: relayed unchecked. */
  check: AnswerCheck | undefined;
}

/** The proxy stage's slice of the request record, written as the exchange settles. */
export interface UpstreamSlice {
  /** The upstream's status, once its answer began. */
  status?: number;
  /** Milliseconds from sending the request to the end of the relayed answer. */
  ms?: number;
  /** Why the exchange failed or was cut short, when it was. */
  failure?: UpstreamFailureKind;
  /** What went wrong, for the access log: the gateway's words and the socket error's code, never the upstream's bytes. */
  failureDetail?: { message: string; code?: string };
  /** Header fields of the upstream's answer the relay policy dropped, when any were. */
  headersDropped?: number;
  /** What checking the answer against the document found, when it was checked. */
  contract?: AnswerVerdict;
}

/** An upstream's origin, parsed once per upstream: where a trace says the exchange went. */
export interface UpstreamOrigin {
  hostname: string;
  port: number;
  /** As URL serialises it: scheme, host and a port that is not the default; never a user or password. */
  origin: string;
}

/** The exchange's facts on the request record (monotonic ms; 0: not yet), its `upstream` slice as it settles. */
export interface ExchangeFacts {
  exchangeStartMs: number;
  exchangeEndMs: number;
  exchangeMethod: string;
  exchangeOrigin: UpstreamOrigin | undefined;
  /** The path sent, with its query. */
  exchangePath: string;
  upstream?: UpstreamSlice;
}

/** How an exchange ended once the upstream's answer began to be relayed. */
export interface ExchangeOutcome {
  status: number;
  /** Milliseconds from sending the request to the end of the relayed response. */
  upstreamMs: number;
  /** Set when the answer was cut short after its head was relayed (the client sees a truncated response). */
  failure?: UpstreamFailureKind;
  /** The client went away before the answer was complete. */
  clientClosed?: boolean;
}

/**
 * Resolves once the answer is relayed, or rejects with an UpstreamFailure when nothing was relayed yet. The record gets its facts
 * synchronously as the exchange settles: the response's `close` (metrics, access log, trace) can fire before a promise continuation runs.
 */
export type Exchange = (request: UpstreamRequest, res: ServerResponse, record?: ExchangeFacts) => Promise<ExchangeOutcome>;

/** Given the exchange's slice as it settles (the relay handler's report). */
export type ExchangeObserver = (slice: UpstreamSlice) => void;

/** An upstream pool's use at one moment, from undici's pool stats. */
export interface UpstreamPoolStats {
  /** Connections open. */
  connected: number;
  /** Open connections carrying no request. */
  free: number;
  /** Requests sent on a connection, not yet answered. */
  running: number;
  /** Requests waiting for a connection (every one allowed is busy). */
  queued: number;
}

export interface Upstream {
  exchange: Exchange;
  /** host[:port], as the Host header the upstream expects. */
  host: string;
  /** Closes pooled connections (on shutdown). */
  close(): Promise<void>;
  /** The pool's use now (read at scrape time). */
  stats(): UpstreamPoolStats;
}

/**
 * For an https:// upstream: undici's own connector with the configured TLS, telling `onServerCertificate` what each new
 * connection's peer presented. HTTP/1.1 only: the relay (headers, framing, the answer check) is written for it, and an
 * upstream that offers h2 through ALPN would otherwise be spoken to in h2.
 */
function tlsConnector(target: URL, options: UpstreamOptions, alerts: TlsAlerts): buildConnector.connector {
  // Verification asked for last, whatever `tls` holds: NODE_TLS_REJECT_UNAUTHORIZED=0 would otherwise switch it off.
  const connect = buildConnector({ ...options.tls, timeout: options.connectTimeoutMs, allowH2: false, rejectUnauthorized: true });
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
        const validTo = seen && tlsSocket.getPeerCertificate().valid_to;
        if (validTo) seen(target.origin, new Date(validTo));
      }
      callback(...result);
    });
  };
}

export function createUpstream(options: UpstreamOptions): Upstream {
  const target = new URL(options.baseUrl);
  const alerts = new TlsAlerts();
  const relayOptions = {
    idleTimeoutMs: options.idleTimeoutMs,
    totalTimeoutMs: options.totalTimeoutMs,
    explainFailure: alerts.explain,
    answerBinding: createAnswerBinding(options.requestIdEcho ?? 'auto'),
  };
  const pool = new Pool(target.origin, {
    connections: options.maxSockets,
    connectTimeout: options.connectTimeoutMs,
    allowH2: false,
    ...(target.protocol === 'https:' ? { connect: tlsConnector(target, options, alerts) } : {}),
    // The upstream's silences are timed by RelayHandler's native timer, which dies young: undici's "fast timers"
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
      const handler = new RelayHandler(res, relayOptions, resolve, reject, settled, request);
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
