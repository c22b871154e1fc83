// Resolves method and path to an operation of the document; refusals come later, after authentication.
import type { RequestHandler } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import type { Contract } from './compile-contract.ts';
import type { Operation, RouteSlice } from './operations.ts';
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

/** A request's operation, with the path's parameters. */
export type Route = RouteSlice;

/** The operation `method` and `path` (below the base path) name; the 405 refusal for a known path; undefined for an unknown one. */
export function matchRoute(contract: Contract, path: string, method: string): Route | GatewayError | undefined {
  const match = isSafePath(path) ? contract.matchPath(path) : undefined;
  if (match?.kind !== 'path') return undefined;
  const operation = operationFor(match.byMethod, method);
  if (operation) return { operation, pathParams: match.pathParams };
  return methodNotAllowed(method, match.byMethod);
}

/** The 405 of `method` at a path that serves `byMethod`, naming what is allowed there (Allow). */
export function methodNotAllowed(method: string, byMethod: ReadonlyMap<string, Operation>): GatewayError {
  const allowed = allowedMethods(byMethod).join(', ');
  return new GatewayError('method_not_allowed', `${method} is not allowed here; allowed: ${allowed}`, { headers: { Allow: allowed } });
}

/**
 * Matches and records the outcome without refusing: stages before authentication know the operation while unauthenticated
 * callers learn nothing (the 404 or 405 is raised by `createRequireOperation`).
 */
export function createMatchOperation(contract: Contract): RequestHandler {
  return function matchOperation(req, res, next) {
    const record = res.locals.gateway;
    // The router is mounted at the base path, so the record's path starts with it.
    const matched = matchRoute(contract, record.path.slice(contract.basePath.length), req.method);
    if (matched instanceof GatewayError) record.routeRefusal = matched;
    else if (matched !== undefined) record.route = matched;
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
