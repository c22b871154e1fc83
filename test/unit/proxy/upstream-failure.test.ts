// Each upstream socket failure maps to one Error, table by table.
import { describe, expect, it } from 'vitest';
import { classifyUpstreamFailure, upstreamFailureError, UPSTREAM_TIMEOUT } from '../../../src/proxy/upstream-failure.ts';

const failure = (code?: string) => Object.assign(new Error('x'), code ? { code } : {});

describe('upstream failures', () => {
  it.each([
    [UPSTREAM_TIMEOUT, 'timeout', 504, 'gateway_timeout'],
    ['ETIMEDOUT', 'timeout', 504, 'gateway_timeout'],
    ['ECONNREFUSED', 'refused', 502, 'bad_gateway'],
    ['EHOSTUNREACH', 'refused', 502, 'bad_gateway'],
    ['ECONNRESET', 'reset', 502, 'bad_gateway'],
    ['EPIPE', 'reset', 502, 'bad_gateway'],
    ['ENOTFOUND', 'dns', 502, 'bad_gateway'],
    ['EAI_AGAIN', 'dns', 502, 'bad_gateway'],
    ['EWHATEVER', 'other', 502, 'bad_gateway'],
    [undefined, 'other', 502, 'bad_gateway'],
  ])('%s is a %s failure answered %i %s', (code, kind, status, errorCode) => {
    const error = failure(code);
    expect(classifyUpstreamFailure(error)).toBe(kind);
    const mapped = upstreamFailureError(error);
    expect(mapped.status).toBe(status);
    expect(mapped.code).toBe(errorCode);
    expect(mapped.cause).toBe(error);
  });
});
