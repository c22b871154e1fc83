// GatewayError: a code from the closed ErrorCode union, the status it implies, and the Error body it renders.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ERROR_STATUS, GatewayError, isErrorBody, type ErrorCode } from '../../../src/errors/gateway-error.ts';

/** What a caller does with a code: a switch over the union, which the compiler checks is exhaustive. */
function retryable(error: GatewayError): boolean {
  switch (error.code) {
    case 'request_timeout':
    case 'rate_limited':
    case 'quota_exceeded':
    case 'service_unavailable':
    case 'upstream_unavailable':
    case 'gateway_timeout':
    case 'brownout':
      return true;
    case 'invalid_request':
    case 'unauthorized':
    case 'stability_not_allowed':
    case 'not_found':
    case 'method_not_allowed':
    case 'conflict':
    case 'gone':
    case 'payload_too_large':
    case 'unsupported_media_type':
    case 'expectation_failed':
    case 'header_fields_too_large':
    case 'internal_error':
    case 'bad_gateway':
    case 'upstream_error':
    case 'upstream_refused_identity':
    case 'upstream_contract_violation':
    case 'upstream_answer_mismatch':
    case 'upstream_tls_failed':
      return false;
    default: {
      // Compiles only while `code` is the union: typed `string`, it would not narrow to never here.
      const unhandled: never = error.code;
      return unhandled;
    }
  }
}

describe('GatewayError', () => {
  it('types its code as the closed ErrorCode union', () => {
    expectTypeOf<GatewayError['code']>().toEqualTypeOf<ErrorCode>();
    // @ts-expect-error a code outside the union is no GatewayError code
    const invented: GatewayError['code'] = 'teapot';
    expect(invented).toBe('teapot');
  });

  it.each(Object.entries(ERROR_STATUS) as Array<[ErrorCode, number]>)('%s answers %i unless told otherwise', (code, status) => {
    const error = new GatewayError(code, 'why');
    expect(error.code).toBe(code);
    expect(error.status).toBe(status);
    expect(error.toBody()).toEqual({ code, message: 'why', status });
  });

  it('takes the status it is given over the one its code implies (a wrapped upstream error)', () => {
    expect(new GatewayError('upstream_error', 'why', { status: 507 }).toBody()).toEqual({ code: 'upstream_error', message: 'why', status: 507 });
  });

  it('keeps its cause and its headers', () => {
    const cause = new Error('socket');
    const error = new GatewayError('service_unavailable', 'why', { cause, headers: { 'Retry-After': '1' } });
    expect(error.cause).toBe(cause);
    expect(error.headers).toEqual({ 'Retry-After': '1' });
  });

  it.each([
    ['rate_limited', true],
    ['upstream_unavailable', true],
    ['not_found', false],
    ['internal_error', false],
  ] as const)('narrows in a switch: %s is retryable: %s', (code, expected) => {
    expect(retryable(new GatewayError(code, 'why'))).toBe(expected);
  });
});

describe('isErrorBody', () => {
  it.each([
    ['an Error body', { code: 'not_found', message: 'No pet with id 7', status: 404 }, true],
    ['one with more fields', { code: 'not_found', message: 'm', status: 404, details: [] }, true],
    ['a code the gateway does not know', { code: 'teapot', message: 'm', status: 418 }, true],
    ['a missing message', { code: 'not_found', status: 404 }, false],
    ['a status that is a string', { code: 'not_found', message: 'm', status: '404' }, false],
    ['a status that is not an integer', { code: 'not_found', message: 'm', status: 404.5 }, false],
    ['a code that is not a string', { code: 404, message: 'm', status: 404 }, false],
    ['an array', [{ code: 'not_found', message: 'm', status: 404 }], false],
    ['null', null, false],
    ['a string', 'not_found', false],
  ])('%s: %s', (_case, value, expected) => {
    expect(isErrorBody(value)).toBe(expected);
  });
});
