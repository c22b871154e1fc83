// The gateway's own answers, without a key and never proxied: the API catalog at the host's root, each version's document under its base path.
import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { API_CATALOG_PATH } from '../contract/gateway-answers.ts';
import { methodNotAllowed, operationFor } from '../contract/match-operation.ts';
import type { Operation } from '../contract/operations.ts';

/** RFC 9727 §3: where the catalog is, on the catalog's and the documents' answers (and no other: their Link fields are the operations'). */
export const API_CATALOG_LINK = `<${API_CATALOG_PATH}>; rel="api-catalog"`;

/**
 * Caches may keep an answer but must ask again before using it (RFC 9111 §5.2.2.4): a reload can change it at any moment,
 * and asking costs a 304 when nothing changed.
 */
export const REVALIDATE = 'no-cache';

/** A representation serialised once, when the pipeline generation is built: every GET sends these bytes, every HEAD their head. */
export interface Representation {
  contentType: string;
  body: Buffer;
  /** A strong validator of the bytes (RFC 9110 §8.8.3): the same on every replica serving the same configuration. */
  etag: string;
}

export function serialised(contentType: string, value: unknown): Representation {
  const body = Buffer.from(JSON.stringify(value), 'utf8');
  return { contentType, body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
}

/** If-None-Match names this representation (RFC 9110 §13.1.2: weak comparison, or `*`). */
function alreadyHeld(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}

/**
 * 200 with the representation; HEAD: the same head, no body (RFC 9110 §9.3.2); 304 when the client holds it (§15.4.5: the
 * validator and caching fields, no content). Appends the catalog link to a Link set before (a deprecated version's).
 */
function send(req: Request, res: Response, { contentType, body, etag }: Representation, catalogLinked: boolean): void {
  res.setHeader('ETag', etag);
  res.setHeader('Cache-Control', REVALIDATE);
  if (catalogLinked) {
    const link = res.getHeader('Link');
    res.setHeader('Link', link === undefined ? API_CATALOG_LINK : `${String(link)}, ${API_CATALOG_LINK}`);
  }
  if (alreadyHeld(req.headers['if-none-match'], etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', body.length);
  res.end(req.method === 'HEAD' ? undefined : body);
}

export interface ApiCatalogAnswerOptions {
  /** The operation that declares the catalog (`x-gateway-answer: api-catalog`): what the request's record names, so metrics count it. */
  operation: Operation;
  catalog: Representation;
}

/**
 * Answers the catalog's path, outside every version's base path: GET and HEAD with the catalog, another method 405. Runs
 * before the versions' stages, so nothing authenticates, rate limits or forwards it.
 */
export function createApiCatalogAnswer({ operation, catalog }: ApiCatalogAnswerOptions): RequestHandler {
  const byMethod = new Map([[operation.method, operation]]);
  return function answerApiCatalog(req, res, next) {
    const record = res.locals.gateway;
    if (record.path !== operation.route) return next();
    if (operationFor(byMethod, req.method) === undefined) throw methodNotAllowed(req.method, byMethod);
    record.route = { operation, pathParams: {} };
    send(req, res, catalog, true);
  };
}

export interface InterfaceDocumentAnswerOptions {
  /** The version's operation that declares its document (`x-gateway-answer: interface-document`). */
  operation: Operation;
  document: Representation;
  /** Whether a catalog is served to link to. */
  catalogLinked: boolean;
}

/**
 * Answers a version's document once its operation is matched, after the version's notices (a deprecated version's document
 * says so) and before authentication. Another method at its path gets the 405 the match decided, not the 401 other paths
 * give first: the path is public, so the refusal tells a caller without a key nothing it could not read in the document.
 */
export function createInterfaceDocumentAnswer({ operation, document, catalogLinked }: InterfaceDocumentAnswerOptions): RequestHandler {
  const byMethod = new Map([[operation.method, operation]]);
  return function answerInterfaceDocument(req, res, next) {
    const record = res.locals.gateway;
    if (record.route?.operation === operation) return send(req, res, document, catalogLinked);
    if (record.path === operation.route) throw record.routeRefusal ?? methodNotAllowed(req.method, byMethod);
    next();
  };
}
