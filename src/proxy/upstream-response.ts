// Relays the upstream's response: success as it came, error bodies that are not Error-shaped wrapped into one.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import { GatewayError, isErrorBody, type ErrorCode } from '../errors/gateway-error.ts';
import { sendError } from '../errors/send-error.ts';

/** Hop-by-hop headers (RFC 9110 §7.6.1) describe one connection and are never relayed. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

const NO_LENGTH: ReadonlySet<string> = new Set(['content-length']);

/** Upstream error bodies are read to see whether they are Error-shaped; larger ones are not worth relaying. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

function isHopByHop(name: string, connectionTokens: ReadonlySet<string>): boolean {
  return HOP_BY_HOP.has(name) || connectionTokens.has(name);
}

/** Copies status and end-to-end headers; headers the gateway already set (X-Request-Id, Deprecation...) win. */
function copyHead(upstream: IncomingMessage, res: ServerResponse, skip: ReadonlySet<string> = new Set()): void {
  const connection = upstream.headers.connection;
  const tokens = new Set(connection ? connection.toLowerCase().split(',').map((token) => token.trim()) : []);
  res.statusCode = upstream.statusCode ?? 502;
  for (const [name, value] of Object.entries(upstream.headers)) {
    if (value === undefined || isHopByHop(name, tokens) || skip.has(name) || res.hasHeader(name)) continue;
    res.setHeader(name, value);
  }
}

const ERROR_CODE_BY_STATUS: Readonly<Record<number, ErrorCode>> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
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
export function wrapUpstreamError(status: number): GatewayError {
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

export interface RelayHooks {
  /** The status line and headers were written to the client: an Error answer is no longer possible. */
  onHeadRelayed(): void;
  /** The whole response was written. */
  onRelayed(): void;
}

/**
 * Success answers stream through as they come. Error answers are read first (up to 64 KiB) to see
 * whether they are Error-shaped; if the upstream cuts one short, nothing has been relayed and the
 * exchange fails with an Error answer of the gateway's own.
 */
export function relayUpstreamResponse(upstream: IncomingMessage, res: ServerResponse, hooks: RelayHooks): void {
  const status = upstream.statusCode ?? 502;
  res.once('finish', hooks.onRelayed);
  if (status < 400) {
    // A 204 has no body, so no length (RFC 9110 §8.6); an intermediary that trusted one would desynchronise.
    copyHead(upstream, res, status === 204 ? NO_LENGTH : undefined);
    res.writeHead(res.statusCode);
    hooks.onHeadRelayed();
    upstream.pipe(res);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  upstream.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_ERROR_BODY_BYTES) tooLarge = true;
    else chunks.push(chunk);
  });
  upstream.on('end', () => {
    if (res.headersSent || res.destroyed) return;
    hooks.onHeadRelayed();
    const body = Buffer.concat(chunks);
    if (!tooLarge && isErrorBody(parseJson(body))) {
      copyHead(upstream, res, NO_LENGTH);
      res.setHeader('Content-Length', body.length);
      res.end(body);
      return;
    }
    copyHead(upstream, res, new Set(['content-length', 'content-type', 'content-encoding', 'etag', 'last-modified', 'content-range']));
    sendError(res, wrapUpstreamError(status));
  });
}
