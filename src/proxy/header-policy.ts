// Which headers cross the gateway, per operation and direction: compiled once at start-up into sets the request path looks up.
import { byResponseKey } from '../contract/declared-responses.ts';
import type { Operation } from '../contract/operations.ts';
import { GATEWAY_OWNED_RESPONSE } from '../http/header-names.ts';
import type { RelayPolicy } from './upstream-response.ts';

/**
 * The client's headers every operation forwards, beside the ones its document declares:
 * - content negotiation (RFC 9110 §12.5): Accept, Accept-Encoding (the gateway relays the body and its
 *   Content-Encoding as they come, so a compressed answer reaches the client intact), Accept-Language;
 * - what describes the body the gateway validated: Content-Type, Content-Language;
 * - conditional requests (RFC 9110 §13.1), which the relayed ETag and Last-Modified make possible:
 *   If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since;
 * - Cache-Control (RFC 9111 §5.2.1): a client's `no-cache` must reach the backend's caches;
 * - User-Agent: the calling software, for the backend's logs; a description, never a credential.
 * Left out: Content-Encoding (validation refuses all but identity, so it says nothing); Range and
 * If-Range (the document declares no 206, and Content-Range is not relayed); Cookie (bearer keys need
 * no session, and the client's cookies for the gateway's domain are not the backend's); Origin and
 * Referer (CORS is the edge's business; Referer leaks where the client was); Prefer (changes the answer
 * beyond the document); Pragma and Accept-Charset (obsolete, RFC 9111 §5.4, RFC 9110 §12.5.2); and
 * every claim about the client's address or the request's route (True-Client-IP, X-Forwarded-Prefix,
 * X-Original-Host...), which the gateway states itself or not at all.
 */
export const STANDARD_FORWARDED: readonly string[] = [
  'accept',
  'accept-encoding',
  'accept-language',
  'content-type',
  'content-language',
  'if-match',
  'if-none-match',
  'if-modified-since',
  'if-unmodified-since',
  'cache-control',
  'user-agent',
];

/**
 * W3C Trace Context and Baggage: never copied as the client sent them, whatever a document or the config
 * lists. The gateway states them itself (upstreamHeaders, the proxy stage): `traceparent` names the
 * gateway's span as the parent, `tracestate` goes with a valid `traceparent` only, `baggage` is bounded.
 */
export const TRACE_CONTEXT: readonly string[] = ['traceparent', 'tracestate', 'baggage'];

/**
 * The upstream's headers every answer relays, beside the ones the document declares for its status:
 * - the representation's own fields: Content-Type, Content-Encoding, Content-Language, and
 *   Content-Length (the length of the body relayed as it comes; the gateway's own bodies set theirs);
 * - caching (RFC 9111): Cache-Control, Expires and Age say how long the answer may be reused (without
 *   them a cache guesses), and Vary which request headers chose it (without it a cache could serve one
 *   client's representation to another);
 * - the validators conditional requests need (RFC 9110 §8.8): ETag, Last-Modified; and Date.
 * Left out unless the document declares them: Location (a redirect could send the client anywhere),
 * Set-Cookie (a backend's cookie, for whatever domain, set in the gateway's origin),
 * Strict-Transport-Security (the edge's policy: a backend's max-age=0 would turn it off for the whole
 * host), WWW-Authenticate (a backend's challenge is about the gateway's token, not the client's key),
 * Server and X-Powered-By (they fingerprint the backend), Content-Range and Accept-Ranges (no ranges).
 * Never relayed, declared or not: Access-Control-* (the gateway owns CORS: GATEWAY_OWNED_RESPONSE).
 */
export const STANDARD_RELAYED: readonly string[] = [
  'content-type',
  'content-encoding',
  'content-language',
  'content-length',
  'cache-control',
  'expires',
  'age',
  'vary',
  'etag',
  'last-modified',
  'date',
];

/** The config's additions to both directions (`headers.forwardToUpstream`, `headers.relayToClient`), lower case. */
export interface HeaderListExtensions {
  forwardToUpstream: readonly string[];
  relayToClient: readonly string[];
}

/** One operation's policy: what the upstream may receive from the client, and what the client may see of the answer. */
export interface OperationHeaderPolicy {
  /** Client header names copied upstream (lower case); everything else is dropped. */
  forwarded: ReadonlySet<string>;
  /** The relay policy without a secret: a request that sends an identity token adds its own. */
  relay: RelayPolicy;
}

/**
 * Compiles an operation's header policy. Every set is built here, once: the request path does one Set
 * lookup per header, and finds the set for a status with one Map lookup.
 */
export function compileHeaderPolicy(operation: Operation, extensions: HeaderListExtensions): OperationHeaderPolicy {
  const forwarded = new Set([...STANDARD_FORWARDED, ...operation.requestHeaders, ...extensions.forwardToUpstream]);
  for (const name of TRACE_CONTEXT) forwarded.delete(name);

  const always = [...STANDARD_RELAYED, ...extensions.relayToClient];
  const relayed = (declared: readonly string[]): ReadonlySet<string> => new Set([...always, ...declared.filter((name) => !GATEWAY_OWNED_RESPONSE.has(name))]);
  const declared = byResponseKey([...operation.responseHeaders].map(([key, names]) => [key, relayed(names)] as const));
  // A status the document covers no way (no `default`): the standard set alone.
  const undeclared = relayed([]);

  return {
    forwarded,
    relay: {
      relayedFor: (status) => declared(status) ?? undeclared,
      secret: undefined,
    },
  };
}
