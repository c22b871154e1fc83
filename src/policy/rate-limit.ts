// Per-key rate limits: counted by key id and operation, shared by every replica through the store.
import type { RequestHandler } from 'express';
import { rateLimit, type Store } from 'express-rate-limit';
import { GatewayError } from '../errors/gateway-error.ts';
import { callerOf } from '../auth/key-store.ts';
import { routeOf } from '../contract/operations.ts';

export interface RateLimitOptions {
  /** Fixed window length. */
  windowMs: number;
  /** Requests per window by operationId, with `default` for the others. */
  limits: Readonly<Record<string, number>> & { default: number };
  /** Where hits are counted; the memory store (one process) when absent. */
  store?: Store;
  /** Store unreachable: let requests through (`allow`) or answer 503 (`deny`). */
  onStoreError: 'allow' | 'deny';
  /** Told of every refusal, for metrics. */
  onLimited?: (operation: string) => void;
  /** Told when a request passes unlimited because the store failed (policy `allow`). */
  onPassedUnlimited?: () => void;
}

/** A key's own limit is set per minute; the window may be another length. */
export function perWindow(perMinute: number, windowMs: number): number {
  return Math.max(1, Math.round((perMinute * windowMs) / 60_000));
}

/**
 * Runs after authentication, so an unauthenticated request never touches anyone's quota, and the
 * counter is the key id, never the client address (a NAT would share one).
 */
export function createRateLimit(options: RateLimitOptions): RequestHandler {
  const { windowMs, limits } = options;
  return rateLimit({
    windowMs,
    limit: (_req, res) => {
      const record = res.locals.gateway;
      const perMinute = callerOf(record).rateLimitPerMinute;
      if (perMinute !== undefined) return perWindow(perMinute, windowMs);
      return limits[routeOf(record).operation.id] ?? limits.default;
    },
    keyGenerator: (_req, res) => `${callerOf(res.locals.gateway).keyId}:${routeOf(res.locals.gateway).operation.id}`,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    identifier: (_req, res) => routeOf(res.locals.gateway).operation.id,
    passOnStoreError: options.onStoreError === 'allow',
    ...(options.store ? { store: options.store } : {}),
    // The checks are about keying by client address, which this limiter never does.
    validate: false,
    // The library reports each request let through on a store error here; the store itself logs the
    // outage once and counts every failure, so this only counts the requests let through.
    logger: { error: () => options.onPassedUnlimited?.(), warn: () => undefined },
    handler: (_req, res, next) => {
      const operation = routeOf(res.locals.gateway).operation.id;
      options.onLimited?.(operation);
      next(new GatewayError('rate_limited', `Rate limit for ${operation} exceeded; retry after the time in Retry-After`));
    },
  });
}
