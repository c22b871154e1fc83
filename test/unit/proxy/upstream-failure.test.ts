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
    ['EWHATEVER', 'other'],
    [undefined, 'other'],
  ])('a socket error with code %s is a %s failure', (code, kind) => {
    expect(classifyUpstreamFailure(failure(code))).toBe(kind);
  });

  it('an UpstreamFailure keeps the kind the exchange observed', () => {
    expect(classifyUpstreamFailure(new UpstreamFailure('headers_timeout', 'silent'))).toBe('headers_timeout');
  });

  it.each(UPSTREAM_FAILURE_KINDS.map((kind) => [kind, kind.endsWith('_timeout') ? 504 : 502, kind.endsWith('_timeout') ? 'gateway_timeout' : 'bad_gateway'] as const))(
    '%s is answered %i %s',
    (kind, status, code) => {
      const cause = new Error('why');
      const error = upstreamFailureError(kind, cause);
      expect(error.status).toBe(status);
      expect(error.code).toBe(code);
      expect(error.message).toMatch(/^The pet store backend /);
      expect(error.cause).toBe(cause);
    },
  );

  it('describes a parser error without the raw bytes it carries', () => {
    const error = Object.assign(new Error('Parse Error: Expected HTTP/'), { code: 'HPE_INVALID_CONSTANT', rawPacket: Buffer.from('secret bytes') });
    expect(describeUpstreamFailure(new UpstreamFailure('protocol', 'not HTTP', { cause: error }))).toEqual({
      kind: 'protocol',
      message: 'not HTTP',
      code: 'HPE_INVALID_CONSTANT',
    });
  });
});
