// The one Express error handler: every failure leaves the gateway as an Error body.
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { GatewayError } from './gateway-error.ts';
import { refuse } from './send-error.ts';

/** Errors raised by Express's own body parsing carry `type` and `status`; map them to our codes. */
function fromHttpError(err: unknown): GatewayError | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { type, status } = err as { type?: unknown; status?: unknown };
  switch (type) {
    case 'entity.too.large':
      return new GatewayError('payload_too_large', 'Request body is larger than the gateway accepts', { cause: err });
    case 'entity.parse.failed':
      return new GatewayError('invalid_request', 'Request body is not valid JSON', { cause: err });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new GatewayError('unsupported_media_type', 'Request body encoding is not supported', { cause: err });
    case 'request.aborted':
    case 'request.size.invalid':
      return new GatewayError('invalid_request', 'Request body was incomplete', { cause: err });
  }
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new GatewayError('invalid_request', 'Request could not be read', { cause: err });
  }
  return undefined;
}

export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return fromHttpError(err) ?? new GatewayError('internal_error', 'The gateway failed to handle the request', { cause: err });
}

/** The last handler of the pipeline. Unexpected errors are reported through `onUnexpected`, never to the client. */
export function createErrorHandler(onUnexpected: (err: unknown) => void): ErrorRequestHandler {
  return function handleError(err, req, res, _next) {
    const error = toGatewayError(err);
    res.locals.gateway.error = error;
    if (error.code === 'internal_error') onUnexpected(err);
    if (res.headersSent) {
      // Too late for an Error body: cut the response short rather than leave a truncated one that looks whole.
      res.destroy();
      return;
    }
    refuse(req, res, error);
  };
}

/** Refuses every path the gateway does not serve. */
export const notFound: RequestHandler = function notFound(_req, _res, next) {
  next(new GatewayError('not_found', 'No operation of the interface is served at this path'));
};
