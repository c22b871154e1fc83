// Each upstream failure maps to one kind and one Error, row by row.
import { describe, expect, it } from 'vitest';
import {
  classifyUpstreamFailure,
  describeUpstreamFailure,
  UPSTREAM_FAILURE_KINDS,
  UpstreamFailure,
  upstreamFailureError,
} from '../../../src/proxy/upstream-failure.ts';

const failure = (code?: string) => Object.assign(new Error('x'), code ? { code } : {});

describe('upstream failures', () => {
  it.each([
    ['ETIMEDOUT', 'connect_timeout'],
    ['ECONNREFUSED', 'refused'],
    ['EHOSTUNREACH', 'refused'],
    ['ECONNRESET', 'reset'],
    ['EPIPE', 'reset'],
    ['ENOTFOUND', 'dns'],
    ['EAI_AGAIN', 'dns'],
    ['HPE_INVALID_CONSTANT', 'protocol'],
    ['HPE_UNEXPECTED_CONTENT_LENGTH', 'protocol'],
    ['UND_ERR_CONNECT_TIMEOUT', 'connect_timeout'],
    ['UND_ERR_HEADERS_TIMEOUT', 'headers_timeout'],
    ['UND_ERR_BODY_TIMEOUT', 'idle_timeout'],
    ['UND_ERR_SOCKET', 'reset'],
    ['UND_ERR_CLOSED', 'reset'],
    ['UND_ERR_DESTROYED', 'reset'],
    ['UND_ERR_RES_CONTENT_LENGTH_MISMATCH', 'protocol'],
    ['UND_ERR_RES_EXCEEDED_MAX_SIZE', 'protocol'],
    ['UND_ERR_INFO', 'protocol'],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'tls_untrusted'],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'tls_untrusted'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'tls_untrusted'],
    ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'tls_untrusted'],
    ['CERT_HAS_EXPIRED', 'tls_expired'],
    ['CERT_NOT_YET_VALID', 'tls_not_yet_valid'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls_wrong_name'],
    ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'tls_client_certificate_refused'],
    ['ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE', 'tls_client_certificate_refused'],
    ['ERR_SSL_SSL/TLS_ALERT_BAD_CERTIFICATE', 'tls_client_certificate_refused'],
    ['ERR_SSL_SSL/TLS_ALERT_HANDSHAKE_FAILURE', 'tls_handshake'],
    ['ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', 'tls_client_certificate_refused'],
    ['ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED', 'tls_client_certificate_refused'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'tls_handshake'],
    ['ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', 'tls_handshake'],
    ['ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', 'tls_handshake'],
    ['EWHATEVER', 'other'],
    [undefined, 'other'],
  ])('a socket error with code %s is a %s failure', (code, kind) => {
    expect(classifyUpstreamFailure(failure(code))).toBe(kind);
  });

  it.each(['bad upgrade', 'bad response'])('undici closing the socket on "%s" (a 101 or a final 100 to a plain request) is a protocol failure', (message) => {
    expect(classifyUpstreamFailure(Object.assign(new Error(message), { code: 'UND_ERR_SOCKET' }))).toBe('protocol');
  });

  it("undici's parser error, which carries no code, is a protocol failure", () => {
    const error = Object.assign(new Error('Response does not match the HTTP/1.1 protocol (Invalid header value char)'), { name: 'HTTPParserError' });
    expect(classifyUpstreamFailure(error)).toBe('protocol');
  });

  it('an UpstreamFailure keeps the kind the exchange observed', () => {
    expect(classifyUpstreamFailure(new UpstreamFailure('headers_timeout', 'silent'))).toBe('headers_timeout');
  });

  const answerFor = (kind: string) =>
    kind === 'answer_mismatch'
      ? ([502, 'upstream_answer_mismatch'] as const)
      : kind.endsWith('_timeout')
        ? ([504, 'gateway_timeout'] as const)
        : kind.startsWith('tls_')
          ? ([502, 'upstream_tls_failed'] as const)
          : ([502, 'bad_gateway'] as const);
  it.each(UPSTREAM_FAILURE_KINDS.map((kind) => [kind, ...answerFor(kind)] as const))('%s is answered %i %s', (kind, status, code) => {
    const cause = new Error('why');
    const error = upstreamFailureError(kind, cause);
    expect(error.status).toBe(status);
    expect(error.code).toBe(code);
    expect(error.message).toMatch(/^The pet store backend /);
    expect(error.cause).toBe(cause);
  });

  it('describes a parser error without the raw bytes it carries', () => {
    const error = Object.assign(new Error('Parse Error: Expected HTTP/'), { code: 'HPE_INVALID_CONSTANT', rawPacket: Buffer.from('secret bytes') });
    expect(describeUpstreamFailure(new UpstreamFailure('protocol', 'not HTTP', { cause: error }))).toEqual({
      kind: 'protocol',
      message: 'not HTTP',
      code: 'HPE_INVALID_CONSTANT',
    });
  });
});
