// What each failure becomes on its way to the client, row by row: the gateway's own refusals kept, body-parsing errors mapped, the rest internal_error.
import { describe, expect, it } from 'vitest';
import { toGatewayError } from '../../../src/errors/error-handler.ts';
import { GatewayError } from '../../../src/errors/gateway-error.ts';

/** An error as raw-body and Express's parsers raise it: a `type`, and the status they would answer. */
const parserError = (type: string | undefined, status: number) => Object.assign(new Error(type ?? 'http error'), { type, status });

describe('toGatewayError', () => {
  it('keeps a GatewayError as it is', () => {
    const refusal = new GatewayError('gone', 'removed');
    expect(toGatewayError(refusal)).toBe(refusal);
  });

  it.each([
    ['entity.too.large', 413, 'payload_too_large', 'Request body is larger than the gateway accepts'],
    ['entity.parse.failed', 400, 'invalid_request', 'Request body is not valid JSON'],
    ['encoding.unsupported', 415, 'unsupported_media_type', 'Request body encoding is not supported'],
    ['charset.unsupported', 415, 'unsupported_media_type', 'Request body encoding is not supported'],
    ['request.aborted', 400, 'invalid_request', 'Request body was incomplete'],
    ['request.size.invalid', 400, 'invalid_request', 'Request body was incomplete'],
    [undefined, 400, 'invalid_request', 'Request could not be read'],
    ['some.other.type', 499, 'invalid_request', 'Request could not be read'],
    [undefined, 500, 'internal_error', 'The gateway failed to handle the request'],
  ])('a parser error of type %s (status %i) becomes %s', (type, status, code, message) => {
    const cause = parserError(type, status);
    const error = toGatewayError(cause);
    expect({ code: error.code, message: error.message }).toEqual({ code, message });
    expect(error.cause).toBe(cause);
  });

  it.each([
    ['an Error', new TypeError('x is undefined')],
    ['a thrown string', 'oops'],
    ['null', null],
  ])('%s is an internal_error that keeps it as its cause', (_case, thrown) => {
    const error = toGatewayError(thrown);
    expect(error.toBody()).toEqual({ code: 'internal_error', message: 'The gateway failed to handle the request', status: 500 });
    expect(error.cause).toBe(thrown);
  });
});
