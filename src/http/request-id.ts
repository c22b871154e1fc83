// Takes the caller's X-Request-Id when it is well-formed, makes one otherwise, and echoes it back.
import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';

/** Printable, no spaces or separators a log or header parser could trip on; long enough for any tracing scheme. */
const WELL_FORMED = /^[A-Za-z0-9._:\-]{8,128}$/;

export const REQUEST_ID_HEADER = 'x-request-id';

export function createRequestId(): RequestHandler {
  return function assignRequestId(req, res, next) {
    const offered = req.headers[REQUEST_ID_HEADER];
    const requestId = typeof offered === 'string' && WELL_FORMED.test(offered) ? offered : randomUUID();
    res.locals.gateway = { requestId, startedAt: process.hrtime.bigint() };
    res.setHeader('X-Request-Id', requestId);
    next();
  };
}
