// The admin API under /admin/ of the admin listener: the admin token first, then the document's routes and bodies, the audit trail.
import { fileURLToPath } from 'node:url';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { loadContract } from '../contract/compile-contract.ts';
import { matchRoute, type Route } from '../contract/match-operation.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { refuse } from '../errors/send-error.ts';
import { REQUEST_ID_HEADER, requestIdOf } from '../pipeline/request-record.ts';
import type { AdminAuthentication } from './admin-auth.ts';
import { queryOf, readAdminBody } from './admin-body.ts';
import type { AdminAction, AdminResult } from '../observability/admin-actions.ts';
import { ADMIN_ROUTES, toAdminRefusal, type AdminOperations, type RouteAnswer } from './routes.ts';
import type { AdminTokens } from './tokens.ts';

/** The admin API's interface document: its routes, path parameters and request bodies are compiled from it at start-up. */
export const ADMIN_DOCUMENT = fileURLToPath(new URL('../../config/admin.openapi.yaml', import.meta.url));

/** Admin bodies are a few fields: anything larger is not one. */
const MAX_BODY_BYTES = 16 * 1024;

export interface AdminApiOptions {
  operations: AdminOperations;
  /** The tokens in force (a reload may replace them); undefined: the API is off, and its paths fall through to 404. */
  tokens: () => AdminTokens | undefined;
  /** The admin token's check, shared with the admin listener's other guarded routes (one failure count per source). */
  authentication: AdminAuthentication;
  logger: Logger;
  /** Counts each change and each failed authentication (`admin_actions_total`). */
  onAction?: (action: AdminAction, result: AdminResult) => void;
  /** Another document than config/admin.openapi.yaml (tests). */
  documentPath?: string;
}

const resultOf = (status: number): AdminResult => (status < 400 ? 'success' : status < 500 ? 'refused' : 'failed');

/**
 * The handler to mount at `/admin`: authentication first, so a caller without a valid token learns nothing of the
 * paths; every change is counted and logged at info with its action, target, token fingerprint and request id.
 */
export function createAdminApi(options: AdminApiOptions): RequestHandler {
  const { operations, tokens, logger, onAction } = options;
  const contract = loadContract(options.documentPath ?? ADMIN_DOCUMENT);
  const missing = contract.operations.filter((operation) => !ADMIN_ROUTES[operation.id]).map((operation) => operation.id);
  if (missing.length > 0) throw new Error(`createAdminApi: the admin document's ${missing.join(', ')} has no route`);

  function route(req: Request): Route {
    const matched = matchRoute(contract, req.path, req.method);
    if (matched === undefined) throw new GatewayError('not_found', `No admin operation is served at ${req.method} ${req.originalUrl.split('?', 1)[0]}`);
    if (matched instanceof GatewayError) throw matched;
    return matched;
  }

  function answer(res: Response, { status, body, text, headers }: RouteAnswer): void {
    if (headers) res.set(headers);
    if (text !== undefined) res.status(status).type(text.contentType).send(text.body);
    else if (body === undefined) res.status(status).end();
    else res.status(status).json(body);
  }

  return async function adminApi(req, res, next) {
    if (tokens() === undefined) return next();
    const reqId = requestIdOf(req.headers[REQUEST_ID_HEADER]);
    res.setHeader('X-Request-Id', reqId);
    res.setHeader('Cache-Control', 'no-store');
    const identity = options.authentication.authenticate(req, reqId);
    if (identity instanceof GatewayError) return refuse(req, res, identity);
    const tokenFingerprint = identity;
    let action: AdminAction | undefined;
    const audit: Record<string, string> = {};
    try {
      const { operation, pathParams } = route(req);
      const adminRoute = ADMIN_ROUTES[operation.id]!;
      action = adminRoute.action;
      if (pathParams.id !== undefined) audit.keyId = pathParams.id;
      if (pathParams.operationId !== undefined) audit.operation = pathParams.operationId;
      const body = await readAdminBody(req, operation, pathParams, MAX_BODY_BYTES);
      const preferred = (types: readonly string[]) => req.accepts([...types]) || types[0]!;
      const done = await adminRoute.run(operations, { params: pathParams, query: queryOf(req), body, preferred });
      if (done.createdKeyId !== undefined) audit[audit.keyId === undefined ? 'keyId' : 'newKeyId'] = done.createdKeyId;
      if (action) record(action, done.status);
      answer(res, done);
    } catch (error) {
      const refusal = toAdminRefusal(error);
      if (action) record(action, refusal.status, refusal);
      if (refusal.status >= 500) logger.error({ err: error, reqId }, 'admin API: the operation failed');
      refuse(req, res, refusal);
    }

    function record(done: AdminAction, status: number, refusal?: GatewayError): void {
      const result = resultOf(status);
      onAction?.(done, result);
      logger.info(
        { action: done, ...audit, tokenFingerprint, reqId, result, status, ...(refusal ? { code: refusal.code } : {}) },
        `admin action ${done}: ${result}`,
      );
    }
  };
}
