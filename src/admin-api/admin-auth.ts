// The admin token on the admin listener: the bearer checked against the tokens in force, failures bounded per source, their log lines throttled.
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { readBearer } from '../auth/bearer.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { refuse } from '../errors/send-error.ts';
import type { AdminAction, AdminResult } from '../observability/admin-actions.ts';
import { createLogThrottle } from '../observability/log-throttle.ts';
import { REQUEST_ID_HEADER, requestIdOf } from '../pipeline/request-record.ts';
import type { Clock } from '../time/clock.ts';
import { createFailedAttempts, failureSource } from './failed-attempts.ts';
import type { AdminTokens } from './tokens.ts';

/** Sent with every 401, as RFC 6750 asks. */
const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="petstore-gateway-admin"' } as const;
/** Sources counted at once below the limit (a window each); blocked sources are kept apart, until their block ends. */
const MAX_TRACKED_SOURCES = 10_000;
/** Failed authentications logged one by one per interval; the rest are told as a count when it ends. */
const FAILURE_LINES_PER_INTERVAL = 5;
const FAILURE_LOG_INTERVAL_MS = 10_000;

export interface AdminAuthenticationOptions {
  /** The tokens in force (a reload may replace them); undefined: the admin API is off. */
  tokens: () => AdminTokens | undefined;
  /** Failed authentications per source per minute before it is refused 429 (`adminApi.maxFailedAuthPerMinute`). */
  maxFailedAuthPerMinute: number;
  clock: Clock;
  logger: Logger;
  /** Counts each failed authentication (`admin_actions_total`). */
  onAction?: (action: AdminAction, result: AdminResult) => void;
}

export interface AdminAuthentication {
  /** The token's fingerprint, or the refusal; every failure counts against the request's source. */
  authenticate(req: IncomingMessage, reqId: string): string | GatewayError;
  /** For operator-only routes outside /admin/ (the deprecation report): they need the token while the admin API is on. */
  guard: RequestHandler;
}

export function createAdminAuthentication(options: AdminAuthenticationOptions): AdminAuthentication {
  const { tokens, logger, onAction } = options;
  const failures = createFailedAttempts({
    limit: options.maxFailedAuthPerMinute,
    windowMs: 60_000,
    maxAddresses: MAX_TRACKED_SOURCES,
    clock: options.clock,
  });
  const failureLines = createLogThrottle({
    linesPerInterval: FAILURE_LINES_PER_INTERVAL,
    intervalMs: FAILURE_LOG_INTERVAL_MS,
    clock: options.clock,
    summarize: (suppressed) =>
      logger.warn(
        { action: 'authenticate', result: 'refused', suppressed, intervalMs: FAILURE_LOG_INTERVAL_MS },
        `admin API: ${suppressed} more failed authentications in ${FAILURE_LOG_INTERVAL_MS / 1000} s, not logged one by one`,
      ),
  });

  function authenticate(req: IncomingMessage, reqId: string): string | GatewayError {
    const address = req.socket.remoteAddress ?? '';
    const blockedMs = failures.blockedFor(address);
    if (blockedMs > 0) {
      // Counted, not logged: the failures that led here were (at most the limit a minute), these are as many as a client sends.
      onAction?.('authenticate', 'refused');
      return new GatewayError('rate_limited', 'Too many failed authentications from this address; retry later', {
        headers: { 'Retry-After': String(Math.ceil(blockedMs / 1000)) },
      });
    }
    const current = tokens();
    const bearer = readBearer(req.headers.authorization);
    const fingerprint = bearer.kind === 'token' && current ? current.match(bearer.token) : undefined;
    if (fingerprint !== undefined) return fingerprint;
    failures.fail(address);
    onAction?.('authenticate', 'refused');
    // Never the header itself: a wrong token is often a right one pasted into the wrong place.
    if (failureLines.admit()) {
      logger.warn(
        { action: 'authenticate', address, source: failureSource(address), reqId, result: 'refused', reason: bearer.kind },
        'admin API: authentication failed',
      );
    }
    return new GatewayError(
      'unauthorized',
      bearer.kind === 'missing' ? 'An admin token is required: Authorization: Bearer <token>' : 'The admin token is not valid',
      { headers: CHALLENGE },
    );
  }

  return {
    authenticate,
    guard: function requireAdminToken(req, res, next) {
      if (tokens() === undefined) return next();
      const reqId = requestIdOf(req.headers[REQUEST_ID_HEADER]);
      res.setHeader('X-Request-Id', reqId);
      const identity = authenticate(req, reqId);
      if (identity instanceof GatewayError) return refuse(req, res, identity);
      next();
    },
  };
}
