// Authenticates the bearer API key: every request on /v1 passes here before anything else is decided.
import type { NextFunction, RequestHandler } from 'express';
import type { Environment } from '../config/schema.ts';
import { GatewayError, RETRY_SOON } from '../errors/gateway-error.ts';
import type { Clock } from '../time/clock.ts';
import { hasApiKeyShape } from './api-key.ts';
import { readBearer } from './bearer.ts';
import type { KeyHasher } from './key-hash.ts';
import type { Consumer, KeyRecord, KeyStore } from './key-store.ts';
import type { RequestSpans } from '../tracing/request-spans.ts';
import type { TraceSlice } from '../tracing/tracer.ts';

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

/** The request record's part authentication reads and writes. */
interface AuthenticatedRecord {
  readonly trace: TraceSlice;
  caller?: Consumer;
}

/** Creates the authentication stage. Fails closed: a key store that cannot answer gives 503, never a pass. */
export function createAuthenticate(options: AuthenticateOptions): RequestHandler {
  const { keyStore, hashKey, environment, clock, onRefusal } = options;

  function refuse(reason: AuthRefusalReason, spans: RequestSpans | undefined): GatewayError {
    onRefusal?.(reason);
    spans?.endAuthenticate(reason);
    const error = reason === 'missing' ? CHALLENGE : `${CHALLENGE}, error="${reason === 'malformed' ? 'invalid_request' : 'invalid_token'}"`;
    return new GatewayError('unauthorized', MESSAGES[reason], { headers: { 'WWW-Authenticate': error } });
  }

  /**
   * Sets the caller the bearer key names, then calls `next` when given; or throws the refusal. `spans` (the
   * request's spans recorded) is told how it went: the `authenticate` span ends here.
   */
  async function identify(
    authorization: string | undefined,
    request: AuthenticatedRecord,
    spans: RequestSpans | undefined,
    next?: NextFunction,
  ): Promise<void> {
    const bearer = readBearer(authorization);
    if (bearer.kind !== 'token') throw refuse(bearer.kind, spans);
    if (!hasApiKeyShape(bearer.token)) throw refuse('unknown', spans);
    let record: KeyRecord | undefined;
    try {
      record = await (spans === undefined ? keyStore.findByHash(hashKey(bearer.token)) : tracedLookup(hashKey(bearer.token), spans));
    } catch (cause) {
      spans?.endAuthenticate('store_unavailable');
      // Whatever went wrong, the key was not checked: fail closed.
      throw new GatewayError('service_unavailable', 'API keys cannot be checked right now; retry shortly', {
        cause,
        headers: RETRY_SOON,
      });
    }
    const reason = refusalFor(record, environment, clock.now());
    if (reason || !record) throw refuse(reason ?? 'unknown', spans);
    spans?.endAuthenticate('ok');
    request.caller = {
      keyId: record.id,
      name: record.consumer,
      ...(record.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: record.rateLimitPerMinute }),
      ...(record.optedIn === undefined || record.optedIn.length === 0 ? {} : { optedIn: record.optedIn }),
    };
    next?.();
  }

  /** The lookup with its cache outcome on the `authenticate` span, and a CLIENT `redis` span for a miss (the store asked). */
  async function tracedLookup(keyHash: string, spans: RequestSpans): Promise<KeyRecord | undefined> {
    try {
      const found = await keyStore.findByHash(keyHash, (outcome) => spans.keyCacheAnswered(outcome));
      spans.endLookup();
      return found;
    } catch (error) {
      spans.endLookup(error instanceof Error ? error.name : 'unknown');
      throw error;
    }
  }

  return function authenticate(req, res, next) {
    const record = res.locals.gateway;
    const spans = record.trace.spans;
    // Spans not recorded: the stage as it always was, nothing written for a trace.
    if (spans === undefined) return identify(req.headers.authorization, record, undefined, next);
    spans.startAuthenticate();
    return identify(req.headers.authorization, record, spans).then(
      () => next(),
      (error: unknown) => {
        // A failure that is not a refusal (those end the span with their reason) ends it with no result.
        spans.endAuthenticate(undefined);
        throw error;
      },
    );
  };
}
