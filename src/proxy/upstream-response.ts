// Relays the upstream's response: the headers its policy lets through, success bodies as they come, error bodies as Errors.
import type { ServerResponse } from 'node:http';
import { GatewayError, isErrorBody, type ErrorCode } from '../errors/gateway-error.ts';
import { STATUS_CODES } from '../http/node-http.ts';
import { withVary } from '../http/cors-vocabulary.ts';
import { HOP_BY_HOP } from '../http/header-names.ts';
import { connectionTokenReader } from '../http/connection-tokens.ts';

/** What the client may see of one answer's head (compiled per operation by compileHeaderPolicy). */
export interface RelayPolicy {
  /** The upstream's header names the client may see with an answer of this status (lower case). */
  relayedFor(status: number): ReadonlySet<string>;
  /** The identity token the gateway sent upstream: a header containing it is never relayed (it speaks for the gateway until it expires). */
  secret: string | undefined;
}

const NO_LENGTH: ReadonlySet<string> = new Set(['content-length']);
const NOTHING_SKIPPED: ReadonlySet<string> = new Set();
const NO_TOKENS: ReadonlySet<string> = new Set();
/** Headers that describe the upstream's error body, not the Error body the gateway sends instead. */
const NOT_DESCRIBING_AN_ERROR: ReadonlySet<string> = new Set(['content-length', 'content-type', 'content-encoding', 'etag', 'last-modified', 'content-range']);

/** Upstream error bodies are read to see whether they are Error-shaped; larger ones are not worth relaying. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

function isHopByHop(name: string, connectionTokens: ReadonlySet<string>): boolean {
  return HOP_BY_HOP.has(name) || connectionTokens.has(name);
}

function carries(value: string | string[], secret: string): boolean {
  return Array.isArray(value) ? value.some((line) => line.includes(secret)) : value.includes(secret);
}

/** The upstream's response head as the exchange receives it: lower-cased names, repeated headers as arrays. */
export type UpstreamHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** Repeated fields arrive as arrays; as Node's client does: the first value of a single-valued field, every Set-Cookie, the others joined. */
const FIRST_VALUE_ONLY: ReadonlySet<string> = new Set([
  'age',
  'authorization',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'from',
  'host',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
]);

function fieldValue(name: string, value: string | string[]): string | string[] {
  if (!Array.isArray(value) || name === 'set-cookie') return value;
  return FIRST_VALUE_ONLY.has(name) ? (value[0] ?? '') : value.join(', ');
}

/** The field names an answer's Connection value lists: not relayed. */
const connectionTokens = connectionTokenReader();

/**
 * Copies the status and the end-to-end headers the policy allows (the gateway's own, X-Request-Id..., win), leaving out hop-by-hop
 * fields and `skip`. Adds the names it set to `copied`; returns how many the policy dropped.
 */
function copyHead(status: number, headers: UpstreamHeaders, res: ServerResponse, relay: RelayPolicy, skip: ReadonlySet<string>, copied?: string[]): number {
  const connection = headers.connection;
  const tokens = connection === undefined ? NO_TOKENS : connectionTokens(String(connection));
  const allowed = relay.relayedFor(status);
  const secret = relay.secret;
  let dropped = 0;
  res.statusCode = status;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || isHopByHop(name, tokens) || skip.has(name)) continue;
    if (!allowed.has(name) || (secret !== undefined && carries(value, secret))) {
      dropped++;
      continue;
    }
    if (res.hasHeader(name)) {
      // The gateway's Vary and the upstream's together chose the answer. Not added to `copied`: an Error that
      // keeps the upstream's names costs a cache some reuse and misleads no one.
      if (name === 'vary') res.setHeader('Vary', withVary(res.getHeader('vary'), fieldValue(name, value)));
      continue;
    }
    res.setHeader(name, fieldValue(name, value));
    copied?.push(name);
  }
  return dropped;
}

const ERROR_CODE_BY_STATUS: Readonly<Record<number, ErrorCode>> = {
  400: 'invalid_request',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  410: 'gone',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'invalid_request',
  429: 'rate_limited',
  500: 'upstream_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
  504: 'gateway_timeout',
};

/** The Error an upstream error body becomes when it is not one already. */
function wrapUpstreamError(status: number): GatewayError {
  const code = ERROR_CODE_BY_STATUS[status] ?? (status >= 500 ? 'upstream_error' : 'invalid_request');
  const reason = STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : '';
  return new GatewayError(code, `The pet store backend answered ${status}${reason}`, { status });
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Whether the body is framed by a transfer coding undici did not decode: any Transfer-Encoding but `chunked` alone (RFC 9112 §6.1).
 * undici removes only a final `chunked` and hands over what lies under it undecoded (`gzip, chunked`, `chunked, chunked`); with any
 * other final coding it reads until the upstream closes. Relayed, those bytes would be framing the gateway cannot vouch for.
 */
export function hasUndecodedTransferCoding(headers: UpstreamHeaders): boolean {
  const coding = headers['transfer-encoding'];
  if (coding === undefined || coding === 'chunked') return false;
  return typeof coding !== 'string' || coding.trim().toLowerCase() !== 'chunked';
}

/**
 * Sets a success answer's head, which Node writes with the first body chunk: an upstream that stalls right after its head still
 * gets the client an Error. Adds the names it set to `relayed` (removed for that Error); returns how many the policy dropped.
 * A 204 has no body, so no length (RFC 9110 §8.6): an intermediary that trusted one would desynchronise.
 */
export function relayHead(status: number, headers: UpstreamHeaders, res: ServerResponse, relay: RelayPolicy, relayed: string[]): number {
  return copyHead(status, headers, res, relay, status === 204 ? NO_LENGTH : NOTHING_SKIPPED, relayed);
}

/** The client's key is never forwarded, so a backend's 401 or 403 refuses the gateway (its token, its setup), not the client. */
export function refusesTheGateway(status: number): boolean {
  return status === 401 || status === 403;
}

/**
 * Answers with an upstream error body (read up to MAX_ERROR_BODY_BYTES): relayed when Error-shaped, wrapped otherwise. A 401 or 403
 * becomes the gateway's own 502, none of the backend's head or body. The gateway's own Errors are written by `refuse` (the one
 * refusal path: sendRefusal). Returns how many header fields the policy dropped.
 */
export function answerUpstreamError(
  status: number,
  headers: UpstreamHeaders,
  body: Buffer | undefined,
  res: ServerResponse,
  relay: RelayPolicy,
  refuse: (error: GatewayError) => void,
): number {
  if (refusesTheGateway(status)) {
    refuse(new GatewayError('upstream_refused_identity', `The pet store backend refused the gateway's request (${status} ${STATUS_CODES[status]})`));
    return 0;
  }
  // An Error body that echoes the identity token is wrapped like any other, so the token stays behind.
  const echoesSecret = body !== undefined && relay.secret !== undefined && body.includes(relay.secret);
  if (body !== undefined && !echoesSecret && isErrorBody(parseJson(body))) {
    const dropped = copyHead(status, headers, res, relay, NO_LENGTH);
    res.setHeader('Content-Length', body.length);
    res.end(body);
    return dropped;
  }
  const dropped = copyHead(status, headers, res, relay, NOT_DESCRIBING_AN_ERROR);
  refuse(wrapUpstreamError(status));
  return dropped;
}
