// Resolves method and path to an operation of the document; refusals come later, after authentication.
import type { RequestHandler } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import type { Contract } from './compile-contract.ts';
import type { Operation } from './operations.ts';
import { isSafePath } from './safe-path.ts';

/** HEAD is served wherever GET is (RFC 9110 §9.3.2): the GET operation, answered without a body. */
export function operationFor(byMethod: ReadonlyMap<string, Operation>, method: string): Operation | undefined {
  return byMethod.get(method) ?? (method === 'HEAD' ? byMethod.get('GET') : undefined);
}

/** The methods a path serves, HEAD beside GET (the 405's Allow, a preflight's Access-Control-Allow-Methods). */
export function allowedMethods(byMethod: ReadonlyMap<string, Operation>): string[] {
  const methods = [...byMethod.keys()];
  if (byMethod.has('GET') && !byMethod.has('HEAD')) methods.splice(methods.indexOf('GET') + 1, 0, 'HEAD');
  return methods;
}

/**
 * Matches once and records the outcome without refusing anything, so that stages before
 * authentication (the deprecation notice) know the operation while unauthenticated callers still
 * learn nothing: the 404 or 405 is decided here and raised by `createRequireOperation`.
 */
export function createMatchOperation(contract: Contract): RequestHandler {
  return function matchOperation(req, res, next) {
    const record = res.locals.gateway;
    // The router is mounted at the base path, so the record's path starts with it.
    const path = record.path.slice(contract.basePath.length);
    const match = isSafePath(path) ? contract.matchPath(path) : undefined;
    const operation = match?.kind === 'path' ? operationFor(match.byMethod, req.method) : undefined;
    if (match?.kind === 'path' && operation) {
      record.route = { operation, pathParams: match.pathParams };
    } else if (match?.kind === 'path') {
      const allowed = allowedMethods(match.byMethod).join(', ');
      record.routeRefusal = new GatewayError('method_not_allowed', `${req.method} is not allowed here; allowed: ${allowed}`, { headers: { Allow: allowed } });
    }
    next();
  };
}

/** Refuses what matched no operation: 404 for an unknown path, 405 with Allow for a known path. */
export function createRequireOperation(): RequestHandler {
  return function requireOperation(req, res, next) {
    const record = res.locals.gateway;
    if (record.route) return next();
    throw record.routeRefusal ?? new GatewayError('not_found', `No operation of the interface is served at ${req.method} ${record.path}`);
  };
}
