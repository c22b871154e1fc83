// Names why an upstream exchange failed and maps that to the gateway's Error: pure tables, tested row by row.
import { GatewayError } from '../errors/gateway-error.ts';

/** Every way an exchange can fail; metrics are labelled with these (and initialised at 0 for each). */
export const UPSTREAM_FAILURE_KINDS = [
  'connect_timeout',
  'headers_timeout',
  'idle_timeout',
  'total_timeout',
  'refused',
  'reset',
  'dns',
  'protocol',
  'tls_untrusted',
  'tls_expired',
  'tls_not_yet_valid',
  'tls_wrong_name',
  'tls_client_certificate_refused',
  'tls_handshake',
  'answer_mismatch',
  'other',
] as const;

export type UpstreamFailureKind = (typeof UPSTREAM_FAILURE_KINDS)[number];

/** A failed exchange, raised by the exchange itself with the kind it observed (a timer, an upgrade...). */
export class UpstreamFailure extends Error {
  readonly kind: UpstreamFailureKind;

  constructor(kind: UpstreamFailureKind, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'UpstreamFailure';
    this.kind = kind;
  }
}

const KIND_BY_CODE: Readonly<Record<string, UpstreamFailureKind>> = {
  ETIMEDOUT: 'connect_timeout',
  ECONNREFUSED: 'refused',
  EHOSTUNREACH: 'refused',
  ENETUNREACH: 'refused',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  ECONNABORTED: 'reset',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  // undici's own (the exchange's client): its timers and what it makes of the upstream's bytes.
  UND_ERR_CONNECT_TIMEOUT: 'connect_timeout',
  UND_ERR_HEADERS_TIMEOUT: 'headers_timeout',
  UND_ERR_BODY_TIMEOUT: 'idle_timeout',
  UND_ERR_SOCKET: 'reset',
  UND_ERR_CLOSED: 'reset',
  UND_ERR_DESTROYED: 'reset',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'protocol',
  UND_ERR_RES_EXCEEDED_MAX_SIZE: 'protocol',
  UND_ERR_INFO: 'protocol',
};

/** Node's codes for a backend certificate it did not verify (OpenSSL's verify results, and the name check's own). */
const TLS_KIND_BY_CODE: Readonly<Record<string, UpstreamFailureKind>> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'tls_untrusted',
  UNABLE_TO_GET_ISSUER_CERT: 'tls_untrusted',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'tls_untrusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'tls_untrusted',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'tls_untrusted',
  CERT_UNTRUSTED: 'tls_untrusted',
  CERT_SIGNATURE_FAILURE: 'tls_untrusted',
  CERT_REJECTED: 'tls_untrusted',
  INVALID_CA: 'tls_untrusted',
  CERT_REVOKED: 'tls_untrusted',
  CERT_HAS_EXPIRED: 'tls_expired',
  CERT_NOT_YET_VALID: 'tls_not_yet_valid',
  ERR_TLS_CERT_ALTNAME_INVALID: 'tls_wrong_name',
  HOSTNAME_MISMATCH: 'tls_wrong_name',
};

/**
 * The alerts a backend sends when it refuses the gateway's client certificate: none offered (TLS 1.3's
 * certificate_required), or one it does not trust, has expired, or denies. OpenSSL names them
 * ERR_SSL_<version>_ALERT_<alert>, the version part differing between TLS 1.2 and 1.3.
 */
const CLIENT_CERTIFICATE_REFUSED =
  /^ERR_SSL_[\w/]+_ALERT_(CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_EXPIRED|CERTIFICATE_REVOKED|CERTIFICATE_UNKNOWN|UNSUPPORTED_CERTIFICATE|ACCESS_DENIED)$/;

/** What a TLS error code says went wrong; undefined when the code is not TLS's. */
function tlsKindOf(code: string): UpstreamFailureKind | undefined {
  const known = TLS_KIND_BY_CODE[code];
  if (known !== undefined) return known;
  if (CLIENT_CERTIFICATE_REFUSED.test(code)) return 'tls_client_certificate_refused';
  // Any other OpenSSL or Node TLS error: no shared version or cipher, plain HTTP where TLS was expected...
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code === 'EPROTO') return 'tls_handshake';
  return undefined;
}

/** undici's words for a 101, or a final 100, to a plain request: the socket is closed, but the upstream broke the protocol. */
const NOT_AN_ANSWER = /^bad (upgrade|response)$/;

/** The kind of a socket, client or parser error; llhttp's `HPE_*` codes mean the upstream did not speak HTTP/1.1. */
export function classifyUpstreamFailure(error: unknown): UpstreamFailureKind {
  if (error instanceof UpstreamFailure) return error.kind;
  // undici's parser errors carry no code: their name says what they are.
  if (error instanceof Error && error.name === 'HTTPParserError') return 'protocol';
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return 'other';
  if (code.startsWith('HPE_')) return 'protocol';
  if (code === 'UND_ERR_SOCKET' && error instanceof Error && NOT_AN_ANSWER.test(error.message)) return 'protocol';
  return KIND_BY_CODE[code] ?? tlsKindOf(code) ?? 'other';
}

const WHY: Readonly<Record<UpstreamFailureKind, string>> = {
  connect_timeout: 'did not accept a connection in time',
  headers_timeout: 'did not answer in time',
  idle_timeout: 'stopped sending its answer',
  total_timeout: 'did not finish its answer in time',
  refused: 'refused the connection',
  reset: 'closed the connection before answering',
  dns: 'could not be found',
  protocol: 'answered with something other than an HTTP response',
  tls_untrusted: 'presented a certificate from an authority the gateway does not trust (TLS)',
  tls_expired: 'presented an expired certificate (TLS)',
  tls_not_yet_valid: 'presented a certificate that is not valid yet (TLS)',
  tls_wrong_name: 'presented a certificate issued for another name (TLS)',
  tls_client_certificate_refused: "refused the gateway's client certificate (TLS)",
  tls_handshake: 'could not agree a TLS connection with the gateway',
  answer_mismatch: 'answered with an answer made for another request (its X-Request-Id); it was not relayed',
  other: 'could not be reached',
};

/**
 * Timeouts are 504; a failed TLS handshake is 502 upstream_tls_failed; an answer not bound to its request 502
 * upstream_answer_mismatch; everything else is 502 bad_gateway.
 */
export function upstreamFailureError(kind: UpstreamFailureKind, cause?: unknown): GatewayError {
  const code =
    kind === 'answer_mismatch'
      ? 'upstream_answer_mismatch'
      : kind.endsWith('_timeout')
        ? 'gateway_timeout'
        : kind.startsWith('tls_')
          ? 'upstream_tls_failed'
          : 'bad_gateway';
  return new GatewayError(code, `The pet store backend ${WHY[kind]}`, { cause });
}

/** What a log line may say about a failure: never the raw bytes a parser error carries (`rawPacket`). */
export function describeUpstreamFailure(error: unknown): { kind: UpstreamFailureKind; message: string; code?: string } {
  const kind = classifyUpstreamFailure(error);
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof UpstreamFailure ? error.cause : error;
  const code = (cause as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? { kind, message, code } : { kind, message };
}

/** What the access log says of a failure: the gateway's words and the socket error's code, never the upstream's bytes. */
export function failureDetail(failure: UpstreamFailure): { message: string; code?: string } {
  const { message, code } = describeUpstreamFailure(failure);
  return code === undefined ? { message } : { message, code };
}
