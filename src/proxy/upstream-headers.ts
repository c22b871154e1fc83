// The headers the upstream receives: the client's end-to-end headers, never its credentials, framing or claims about itself.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/**
 * Never copied from the client. Hop-by-hop headers describe the client's connection (RFC 9110 §7.6.1);
 * framing (Content-Length, Transfer-Encoding, Expect) and Host are the gateway's to set for the bytes it
 * sends; the credential is the client's alone; the rest are claims a client could forge about its
 * address or ask a backend framework to re-route with, and are rebuilt below or dropped.
 */
const NEVER_COPIED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'content-length',
  'expect',
  'host',
  'authorization',
  'x-request-id',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'forwarded',
  'x-real-ip',
  'x-original-url',
  'x-rewrite-url',
  'x-original-method',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
]);

/** Claims about the caller are the gateway's alone (signed identity, or the plain consumer headers when configured). */
const CALLER_CLAIM_PREFIX = 'x-consumer-';

/** End-to-end headers a `Connection:` token may not remove: the body would reach the upstream unlabelled. */
const NOT_REMOVABLE_BY_CONNECTION_TOKEN = new Set(['content-type', 'content-encoding']);

export interface ForwardingFacts {
  requestId: string;
  /** The client's address as the socket reports it. */
  peer: string;
  proto: 'http' | 'https';
  /** host[:port] of the upstream. */
  upstreamHost: string;
  /** The exact number of body bytes the gateway sends, when it sends a body. */
  bodyLength: number | undefined;
  /** Whether the method carries a body by definition (POST, PUT, PATCH): an empty one is declared as 0. */
  methodTakesBody: boolean;
}

function connectionTokens(value: string | undefined): Set<string> {
  const tokens = new Set<string>();
  if (!value) return tokens;
  for (const token of value.split(',')) {
    const name = token.trim().toLowerCase();
    if (name && !NOT_REMOVABLE_BY_CONNECTION_TOKEN.has(name)) tokens.add(name);
  }
  return tokens;
}

/** RFC 7239 §6: an IPv6 node is quoted and bracketed. */
function forwardedNode(address: string): string {
  return address.includes(':') ? `"[${address}]"` : address;
}

function joined(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * Builds the upstream's request headers from the client's. The forwarding chain is appended to, as
 * X-Forwarded-For always was: the last element is the one this gateway saw on the socket, the only
 * one a backend may trust.
 */
export function upstreamHeaders(client: IncomingHttpHeaders, facts: ForwardingFacts): OutgoingHttpHeaders {
  const removed = connectionTokens(client.connection);
  const headers: OutgoingHttpHeaders = {};
  for (const name in client) {
    if (NEVER_COPIED.has(name) || removed.has(name) || name.startsWith(CALLER_CLAIM_PREFIX)) continue;
    const value = client[name];
    if (value !== undefined) headers[name] = value;
  }
  headers.host = facts.upstreamHost;
  if (facts.bodyLength !== undefined) headers['content-length'] = String(facts.bodyLength);
  else if (facts.methodTakesBody) headers['content-length'] = '0';
  headers['x-request-id'] = facts.requestId;

  const previousFor = joined(client['x-forwarded-for']);
  headers['x-forwarded-for'] = previousFor ? `${previousFor}, ${facts.peer}` : facts.peer;
  headers['x-forwarded-proto'] = facts.proto;
  const clientHost = client.host;
  if (clientHost) headers['x-forwarded-host'] = clientHost;
  const element = `for=${forwardedNode(facts.peer)};proto=${facts.proto}${clientHost ? `;host="${clientHost.replaceAll('"', '')}"` : ''}`;
  const previousForwarded = joined(client.forwarded);
  headers.forwarded = previousForwarded ? `${previousForwarded}, ${element}` : element;
  headers['x-real-ip'] = facts.peer;
  return headers;
}
