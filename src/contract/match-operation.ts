// Resolves method and path to an operation of the document; refusals come later, after authentication.
import type { RequestHandler } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import type { Contract } from './compile-contract.ts';
import type { Operation } from './operations.ts';
import { isSafePath } from './safe-path.ts';

function rawPathOf(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** HEAD is served wherever GET is (RFC 9110 §9.3.2): the GET operation, answered without a body. */
function operationFor(byMethod: ReadonlyMap<string, Operation>, method: string): Operation | undefined {
  return byMethod.get(method) ?? (method === 'HEAD' ? byMethod.get('GET') : undefined);
}

function allowedMethods(byMethod: ReadonlyMap<string, Operation>): string[] {
  const methods = [...byMethod.keys()];
  if (byMethod.has('GET') && !byMethod.has('HEAD')) methods.splice(methods.indexOf('GET') + 1, 0, 'HEAD');
  return methods;
}

/**
 * Records the operation in the request context without refusing anything, so that stages before
 * authentication (the deprecation notice) know it while unauthenticated callers still learn nothing.
 */
export function createMatchOperation(contract: Contract): RequestHandler {
  return function matchOperation(req, res, next) {
    const rawPath = rawPathOf(req.url);
    if (!isSafePath(rawPath)) return next();
    const match = contract.matchPath(rawPath);
    if (match.kind === 'path') {
      const operation = operationFor(match.byMethod, req.method);
      if (operation) {
        res.locals.gateway.operation = operation;
        res.locals.gateway.pathParams = match.pathParams;
      }
    }
    next();
  };
}

/** Refuses what matched no operation: 404 for an unknown path, 405 with Allow for a known path. */
export function createRequireOperation(contract: Contract): RequestHandler {
  return function requireOperation(req, res, next) {
    if (res.locals.gateway.operation) return next();
    const rawPath = rawPathOf(req.url);
    const match = isSafePath(rawPath) ? contract.matchPath(rawPath) : { kind: 'none' as const };
    if (match.kind === 'none') {
      const path = rawPathOf(req.originalUrl);
      throw new GatewayError('not_found', `No operation of the interface is served at ${req.method} ${path}`);
    }
    const allowed = allowedMethods(match.byMethod).join(', ');
    throw new GatewayError('method_not_allowed', `${req.method} is not allowed here; allowed: ${allowed}`, {
      headers: { Allow: allowed },
    });
  };
}
