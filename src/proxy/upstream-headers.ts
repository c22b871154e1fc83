// The headers the upstream receives: the client's headers its operation's policy allows, and the ones the gateway states itself.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { connectionTokenReader } from '../http/connection-tokens.ts';
import { boundedBaggage } from '../http/trace-context.ts';
import { isForwardedValue } from './forwarded.ts';

/** End-to-end headers a `Connection:` token may not remove: the body would reach the upstream unlabelled. */
const NOT_REMOVABLE_BY_CONNECTION_TOKEN = new Set(['content-type']);

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
  /** The client's `tracestate` as the trace slice kept it (only with a valid `traceparent`, checked). */
  traceState: string | undefined;
}

const NO_TOKENS: ReadonlySet<string> = new Set();

/** The field names a client's Connection value removes. */
const removableTokens = connectionTokenReader((name) => !NOT_REMOVABLE_BY_CONNECTION_TOKEN.has(name));

function connectionTokens(value: string | undefined): ReadonlySet<string> {
  return value ? removableTokens(value) : NO_TOKENS;
}

/** RFC 7239 §6: an IPv6 node is quoted and bracketed. */
function forwardedNode(address: string): string {
  return address.includes(':') ? `"[${address}]"` : address;
}

function joined(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * The upstream's request headers: the client's in `forwarded` and not named by its `Connection:`, then the gateway's own (Host,
 * Content-Length, X-Request-Id, trace context, forwarding chain). The chain is appended to: its last element, the one this gateway
 * saw on the socket, is the only one a backend may trust.
 */
export function upstreamHeaders(client: IncomingHttpHeaders, forwarded: ReadonlySet<string>, facts: ForwardingFacts): OutgoingHttpHeaders {
  const removed = connectionTokens(client.connection);
  const headers: OutgoingHttpHeaders = {};
  for (const name in client) {
    if (!forwarded.has(name) || removed.has(name)) continue;
    const value = client[name];
    if (value !== undefined) headers[name] = value;
  }
  if (facts.traceState !== undefined) headers.tracestate = facts.traceState;
  const baggage = removed.has('baggage') ? undefined : boundedBaggage(client.baggage);
  if (baggage !== undefined) headers.baggage = baggage;
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
  // A chain that does not parse is dropped, not appended to: an open quote would swallow the element
  // the gateway appends, and a backend reads the last element as the address it may trust.
  const previousForwarded = joined(client.forwarded);
  headers.forwarded = previousForwarded && isForwardedValue(previousForwarded) ? `${previousForwarded}, ${element}` : element;
  headers['x-real-ip'] = facts.peer;
  return headers;
}
