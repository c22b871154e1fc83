// The exchange's vocabulary: what it is given, what it writes on the request record, how it ends. Apart from exchange.ts so the
// handlers the exchange builds can name these without importing it (no import circle in src/proxy).
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { GatewayError } from '../errors/gateway-error.ts';
import type { OnRetired } from '../forks/upstream-stray-bytes.ts';
import type { AnswerCheck, AnswerVerdict } from './answer-check.ts';
import type { RequestIdEcho } from './answer-binding.ts';
import type { UpstreamFailureKind } from './upstream-failure.ts';
import type { RelayPolicy } from './upstream-response.ts';
import type { UpstreamTlsOptions } from './upstream-tls.ts';

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
  /** Offer HTTP/2 over TLS (ALPN) to an https:// upstream (config `upstream.http2`); absent: HTTP/1.1 only. */
  http2?: boolean;
  /** Whether an answer must carry the X-Request-Id sent with its request (config `upstream.requestIdEcho`); absent: `auto`. */
  requestIdEcho?: RequestIdEcho;
  /** Told the notAfter of the certificate an https:// upstream presents on each new connection (the expiry metric). */
  onServerCertificate?: (origin: string, notAfter: Date) => void;
  /** Told each HTTP/1.1 connection closed for bytes outside an answer, and why (the retired-connections metric). */
  onConnectionRetired?: OnRetired;
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
  /** Where a copy of the upstream's answer goes, for a shadow request's comparison (src/shadow); absent for most requests. */
  tap?: AnswerTap | undefined;
}

/**
 * Told the upstream's answer as it arrives, beside the relay, without changing it: the final head, the body's chunks (held by
 * reference, never copied), and its end. An answer that fails midway never ends.
 */
export interface AnswerTap {
  head(status: number, headers: Readonly<Record<string, string | string[] | undefined>>): void;
  /** False: the tap wants no more of this answer (over its bound); it is not told the rest. */
  chunk(bytes: Buffer): boolean;
  end(): void;
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
  /** The Error the gateway answered with, when it refused (sendRefusal): the access line, metrics and span read this one code. */
  error?: GatewayError;
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

/** A handler of the exchange's chain (src/proxy/*-handler.ts): the undici callbacks it forwards, every one present. */
export type ChainHandler = Required<
  Pick<Dispatcher.DispatchHandler, 'onRequestStart' | 'onResponseStart' | 'onResponseData' | 'onResponseEnd' | 'onResponseError'>
>;

/** What a handler before the relay found about the answer: read once, as the exchange settles, for its slice. */
export interface AnswerFindings {
  verdict(): AnswerVerdict | undefined;
}

/** The relay, the chain's last handler, as the answer check sees it: what a handler that holds or refuses an answer asks of it. */
export interface AnswerRelay extends ChainHandler {
  /** The exchange has ended: what arrives now is not relayed. */
  readonly settled: boolean;
  /** Where the slice's `contract` is read from when the exchange settles. */
  findings: AnswerFindings | undefined;
  /** A part of the answer with this status arrived and is held before the relay: the upstream is not silent. */
  answerHeld(status: number): void;
  /** The client gets `error` instead of the answer, whose status was `status`; none of the answer is relayed. */
  refuseAnswer(status: number, error: GatewayError): void;
}

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
