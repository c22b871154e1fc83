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

  it.each(
    UPSTREAM_FAILURE_KINDS.map((kind) => [kind, kind.endsWith('_timeout') ? 504 : 502, kind.endsWith('_timeout') ? 'gateway_timeout' : 'bad_gateway'] as const),
  )('%s is answered %i %s', (kind, status, code) => {
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
