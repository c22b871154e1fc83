// An admin request's query, path parameters and JSON body, checked against its operation in the admin document, as the public side checks its own.
import type { Request } from 'express';
import getRawBody from 'raw-body';
import type { Operation } from '../contract/operations.ts';
import { checkBody, checkMediaType, checkPath, checkQuery } from '../contract/validate-request.ts';
import { toGatewayError } from '../errors/error-handler.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { announcesBody } from '../http/framing.ts';

/** The request's query string, as its parameters were checked by `readAdminBody`. */
export function queryOf(req: Request): URLSearchParams {
  const questionMark = req.originalUrl.indexOf('?');
  return new URLSearchParams(questionMark === -1 ? '' : req.originalUrl.slice(questionMark + 1));
}

/**
 * The parsed body (undefined when none is taken or sent). An undescribed field (`additionalProperties: false`), a body
 * too large, not JSON or not UTF-8 is refused with a GatewayError.
 */
export async function readAdminBody(req: Request, operation: Operation, pathParams: Readonly<Record<string, string>>, maxBodyBytes: number): Promise<unknown> {
  checkPath(operation, pathParams);
  const questionMark = req.originalUrl.indexOf('?');
  checkQuery(operation, questionMark === -1 ? '' : req.originalUrl.slice(questionMark + 1));
  const spec = operation.requestBody;
  if (!spec) {
    if (announcesBody(req.headers)) throw new GatewayError('invalid_request', `${operation.id} takes no request body`);
    return undefined;
  }
  if (!announcesBody(req.headers)) {
    checkBody(spec, undefined);
    return undefined;
  }
  checkMediaType(req, spec);
  let raw: Buffer;
  try {
    raw = await getRawBody(req, { limit: maxBodyBytes, length: req.headers['content-length'] ?? null });
  } catch (error) {
    // raw-body's own errors (too large, aborted) are HTTP errors the gateway already has words for.
    throw toGatewayError(error);
  }
  return checkBody(spec, raw);
}
