// Checks a request against its operation's parameters and body before anything is sent upstream.
import type { Request, RequestHandler } from 'express';
import getRawBody from 'raw-body';
import { GatewayError } from '../errors/gateway-error.ts';
import { announcesBody, expectsContinue } from '../http/framing.ts';
import { routeOf, type Operation, type ParameterSpec, type RequestBodySpec } from './operations.ts';
import { describeNonCanonicalInteger, findNonCanonicalInteger } from './integer-spelling.ts';
import { mediaTypeOf } from './declared-responses.ts';
import { describeSchemaError } from './schema-validator.ts';
import { parseJsonBody } from './strict-json.ts';

export interface ValidateRequestOptions {
  /** Bodies larger than this are refused with 413. */
  maxBodyBytes: number;
}

/** A request whose body can no longer be read: the client left before it ended (see validateRequest). */
const BODY_GONE = new GatewayError('invalid_request', 'Request body was incomplete');

function invalid(message: string): GatewayError {
  return new GatewayError('invalid_request', message);
}

function checkParameter(spec: ParameterSpec, raw: string, label: string): void {
  const parsed = spec.parse(raw);
  if (!parsed.ok) throw invalid(`${label} '${spec.name}' ${parsed.reason}`);
  if (!spec.validate(parsed.value)) {
    throw invalid(describeSchemaError(spec.validate.errors?.[0], `${label} '${spec.name}'`));
  }
}

export function checkQuery(operation: Operation, queryString: string): void {
  const declared = operation.queryParameters;
  if (queryString === '' && !declared.some((spec) => spec.required)) return;
  const query = new URLSearchParams(queryString);
  for (const name of query.keys()) {
    if (!declared.some((spec) => spec.name === name)) throw invalid(`Query parameter '${name}' is not accepted by ${operation.id}`);
  }
  for (const spec of declared) {
    const values = query.getAll(spec.name);
    if (values.length === 0) {
      if (spec.required) throw invalid(`Query parameter '${spec.name}' is required`);
      continue;
    }
    if (values.length > 1) throw invalid(`Query parameter '${spec.name}' must be given once`);
    checkParameter(spec, values[0]!, 'Query parameter');
  }
}

export function checkPath(operation: Operation, pathParams: Readonly<Record<string, string>>): void {
  for (const spec of operation.parameters) {
    if (spec.in !== 'path') continue;
    checkParameter(spec, pathParams[spec.name] ?? '', 'Path parameter');
  }
}

/** A body declared larger than the limit is refused unread, closing the connection: reading it to discard it is unbounded. */
function checkDeclaredSize(req: Request, maxBodyBytes: number): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBodyBytes) {
    throw new GatewayError('payload_too_large', 'Request body is larger than the gateway accepts', {
      headers: { Connection: 'close' },
    });
  }
}

export function checkMediaType(req: Request, spec: RequestBodySpec): void {
  const declared = req.headers['content-type'];
  const mediaType = declared === undefined ? undefined : mediaTypeOf(declared);
  if (!mediaType || !spec.mediaTypes.includes(mediaType)) {
    throw new GatewayError('unsupported_media_type', `Request body must be sent as ${spec.mediaTypes.join(' or ')}`);
  }
  const charset = /;\s*charset=("?)([^";]+)\1/i.exec(declared ?? '')?.[2]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new GatewayError('unsupported_media_type', 'Request body must be encoded as UTF-8');
  }
  // The gateway validates and forwards the bytes it received; it does not inflate them.
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== 'identity') {
    throw new GatewayError('unsupported_media_type', 'Request body encoding is not supported');
  }
}

/** Checks the body against its operation's; returns the value it parsed (undefined for no body). */
export function checkBody(spec: RequestBodySpec, raw: Buffer | undefined): unknown {
  if (!raw || raw.length === 0) {
    if (spec.required) throw invalid('Request body is required');
    return undefined;
  }
  // Strict, because the upstream gets these bytes and not the parsed value: a duplicate name, a
  // replaced byte or 1e2 for an integer could mean something else to the backend than was checked.
  const parsed = parseJsonBody(raw);
  if (!parsed.ok) throw invalid(`Request body ${parsed.reason}`);
  if (!spec.validate(parsed.value)) throw invalid(describeSchemaError(spec.validate.errors?.[0], 'Request body'));
  const misspelled = findNonCanonicalInteger(spec.validate, parsed.value, parsed.nonCanonicalIntegers);
  if (misspelled) throw invalid(describeNonCanonicalInteger(misspelled, 'Request body'));
  return parsed.value;
}

/** Validates parameters, then reads and validates the body, kept as the bytes received for the upstream. */
export function createValidateRequest(options: ValidateRequestOptions): RequestHandler {
  return function validateRequest(req, res, next) {
    const record = res.locals.gateway;
    const { operation, pathParams } = routeOf(record);
    checkPath(operation, pathParams);
    checkQuery(operation, record.query);
    const spec = operation.requestBody;
    if (!spec) {
      if (announcesBody(req.headers)) throw invalid(`${operation.id} takes no request body`);
      return next();
    }
    if (!announcesBody(req.headers)) {
      checkBody(spec, undefined);
      return next();
    }
    checkMediaType(req, spec);
    checkDeclaredSize(req, options.maxBodyBytes);
    // A client that left while an earlier stage waited had its request destroyed by Node: raw-body would call
    // that a 500, but it is the client's incomplete request.
    if (!req.readable) throw BODY_GONE;
    if (expectsContinue(req)) {
      // Every check that needs no body has passed: only now is the client invited to send it.
      res.writeContinue();
      record.continueSent = true;
    }
    // raw-body stops reading at the limit (body-parser would read and discard the rest first); the
    // refusal then closes the connection, so a chunked body cannot make the gateway receive without end.
    getRawBody(req, { limit: options.maxBodyBytes }, (error, raw) => {
      if (error) return next(error);
      try {
        checkBody(spec, raw);
        if (raw.length > 0) record.body = raw;
        next();
      } catch (refusal) {
        next(refusal);
      }
    });
  };
}
