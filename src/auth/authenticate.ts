// Authenticates the bearer API key: every request on /v1 passes here before anything else is decided.
import type { NextFunction, RequestHandler } from 'express';
import type { Environment } from '../config/schema.ts';
import { GatewayError, RETRY_SOON } from '../errors/gateway-error.ts';
import type { Clock } from '../time/clock.ts';
import { monotonicMs } from '../time/monotonic.ts';
import type { KeyHasher } from './key-hash.ts';
import type { Consumer, KeyLookupFacts, KeyRecord, KeyStore } from './key-store.ts';
import { readPresentedKey } from './presented-key.ts';

export type AuthRefusalReason = 'missing' | 'malformed' | 'unknown' | 'revoked' | 'expired' | 'wrong_environment';

export interface AuthenticateOptions {
  keyStore: KeyStore;
  hashKey: KeyHasher;
  /** The environment this gateway serves: keys not valid in it are refused. */
  environment: Environment;
  clock: Clock;
  /** Told of every refusal, for metrics; never given the key. */
  onRefusal?: (reason: AuthRefusalReason) => void;
}

const CHALLENGE = 'Bearer realm="petstore"';

const MESSAGES: Record<AuthRefusalReason, string> = {
  missing: 'An API key is required: send it as "Authorization: Bearer <API key>"',
  malformed: 'The Authorization header must have the form "Bearer <API key>"',
  unknown: 'The API key is not valid',
  revoked: 'The API key has been revoked',
  expired: 'The API key has expired',
  wrong_environment: 'The API key is not valid in this environment',
};

/** Decides a stored record against the gateway's environment and the clock. */
function refusalFor(record: KeyRecord | undefined, environment: Environment, now: number): AuthRefusalReason | undefined {
  if (!record) return 'unknown';
  if (record.revoked) return 'revoked';
  if (record.expiresAt !== undefined && Date.parse(record.expiresAt) <= now) return 'expired';
  if (!record.environments.includes(environment)) return 'wrong_environment';
  return undefined;
}

/**
 * What authentication found, and when (monotonic milliseconds; 0: not yet), on the request record: the
 * key cache's answer and the store's lookup (KeyLookupFacts) among them. Tracing reads them at completion.
 */
export interface AuthFacts extends KeyLookupFacts {
  authStartMs: number;
  authEndMs: number;
  lookupEndMs: number;
  /** The name of the error the store's lookup failed with. */
  lookupError: string | undefined;
  /** `ok`, the refusal's reason or `store_unavailable`; none when the stage failed otherwise. */
  authResult: string | undefined;
}

/** The request record's part authentication reads and writes. */
interface AuthenticatedRecord extends AuthFacts {
  caller?: Consumer;
}

/** Creates the authentication stage. Fails closed: a key store that cannot answer gives 503, never a pass. */
export function createAuthenticate(options: AuthenticateOptions): RequestHandler {
  const { keyStore, hashKey, environment, clock, onRefusal } = options;

  function refuse(reason: AuthRefusalReason, record: AuthenticatedRecord): GatewayError {
    onRefusal?.(reason);
    record.authResult = reason;
    const error = reason === 'missing' ? CHALLENGE : `${CHALLENGE}, error="${reason === 'malformed' ? 'invalid_request' : 'invalid_token'}"`;
    return new GatewayError('unauthorized', MESSAGES[reason], { headers: { 'WWW-Authenticate': error } });
  }

  /** Sets the caller the bearer key names, then calls `next`; or throws the refusal. The stage's facts go on the record as it runs. */
  async function identify(authorization: string | undefined, request: AuthenticatedRecord, next: NextFunction): Promise<void> {
    request.authStartMs = monotonicMs();
    let record: KeyRecord | undefined;
    try {
      const presented = readPresentedKey(authorization);
      if (presented.kind !== 'key') throw refuse(presented.kind, request);
      try {
        record = await keyStore.findByHash(hashKey(presented.key), request);
        if (request.lookupStartMs !== 0) request.lookupEndMs = monotonicMs();
      } catch (cause) {
        if (request.lookupStartMs !== 0) {
          request.lookupError = cause instanceof Error ? cause.name : 'unknown';
          request.lookupEndMs = monotonicMs();
        }
        request.authResult = 'store_unavailable';
        // Whatever went wrong, the key was not checked: fail closed.
        throw new GatewayError('service_unavailable', 'API keys cannot be checked right now; retry shortly', {
          cause,
          headers: RETRY_SOON,
        });
      }
      const reason = refusalFor(record, environment, clock.now());
      if (reason || !record) throw refuse(reason ?? 'unknown', request);
      request.authResult = 'ok';
    } finally {
      request.authEndMs = monotonicMs();
    }
    request.caller = {
      keyId: record.id,
      name: record.consumer,
      ...(record.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: record.rateLimitPerMinute }),
      ...(record.quotaPerDay === undefined ? {} : { quotaPerDay: record.quotaPerDay }),
      ...(record.quotaPerMonth === undefined ? {} : { quotaPerMonth: record.quotaPerMonth }),
      ...(record.optedIn === undefined || record.optedIn.length === 0 ? {} : { optedIn: record.optedIn }),
    };
    next();
  }

  return function authenticate(req, res, next) {
    return identify(req.headers.authorization, res.locals.gateway, next);
  };
}
