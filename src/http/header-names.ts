// Header names no configuration or document may add to what crosses the gateway: read by the config schema and the contract compiler.

/** Hop-by-hop fields (RFC 9110 §7.6.1): they describe one connection, never the message. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
]);

/**
 * Never taken from the client, whatever the config or a document says: framing and Host are the gateway's; the credential is the
 * client's alone; the request id, forwarding chain, identity and claims about the client's address or route are the gateway's to
 * state or not at all; re-route and method-override fields would make the backend do other than what was validated.
 */
export const NEVER_FORWARDED: ReadonlySet<string> = new Set([
  ...HOP_BY_HOP,
  'content-length',
  'expect',
  'host',
  'authorization',
  'x-request-id',
  // The mark of a shadow request (src/shadow): the gateway sets it on its copies to staging, never a client.
  'x-gateway-shadow',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'forwarded',
  'x-real-ip',
  'x-consumer-id',
  'x-consumer-name',
  'x-forwarded-port',
  'x-forwarded-prefix',
  'x-forwarded-scheme',
  'x-forwarded-ssl',
  'x-forwarded-server',
  'front-end-https',
  'true-client-ip',
  'x-client-ip',
  'x-host',
  'x-original-host',
  'x-original-url',
  'x-rewrite-url',
  'x-original-method',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
]);

/**
 * The CORS response fields of the Fetch standard (and Private Network Access's): the gateway owns CORS,
 * configured or off, so a backend's (say `Access-Control-Allow-Origin: *` with credentials) never opens the API to other sites.
 */
export const CORS_RESPONSE: readonly string[] = [
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-expose-headers',
  'access-control-max-age',
  'access-control-allow-private-network',
];

/** The gateway's own fields, never taken from the upstream even where declared: their absence means something (no count, no origin). */
export const GATEWAY_OWNED_RESPONSE: ReadonlySet<string> = new Set(['x-request-id', 'ratelimit', 'ratelimit-policy', ...CORS_RESPONSE]);

/** What `headers.relayToClient` may not name: the connection's, the framing's and the gateway's own fields. */
export const NOT_RELAYABLE_BY_CONFIG: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'content-length', ...GATEWAY_OWNED_RESPONSE]);
