// Signs the caller's identity for the upstream as a short JWT, reusing one token per caller and operation for most of its life.
import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { SignJWT } from 'jose';
import type { Environment } from '../config/schema.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import type { SigningKey } from './signing-key.ts';

/** Longest lifetime a token may have: a leaked one is useful for at most this long. */
export const MAX_TOKEN_TTL_SECONDS = 300;

/** Who a token speaks for: the authenticated API key and the operation it is calling. */
export interface IdentityCaller {
  /** The API key's id: the token's `sub`. */
  keyId: string;
  /** The consumer the key belongs to: the `consumer` claim. */
  consumer: string;
  /** The interface document's operationId: the `operation_id` claim. */
  operationId: string;
}

export interface IdentitySignerOptions {
  key: SigningKey;
  /** `iss` of every token. */
  issuer: string;
  /** `aud` of every token. */
  audience: string;
  /** The `environment` claim: which environment's gateway vouches for the caller. */
  environment: Environment;
  /** Lifetime of a token, `exp - iat`; at most MAX_TOKEN_TTL_SECONDS. Default 120. */
  ttlSeconds?: number;
  /** Tokens kept for reuse, one per caller and operation; the least recently used goes first. Default 10,000. */
  maxCachedTokens?: number;
  clock?: Clock;
  /** Called once per signature made, when it is made and cached: for a metric (reuse means far fewer than requests). */
  onSigned?: () => void;
}

export interface IdentitySigner {
  /**
   * The compact JWT for this caller. A cached token with a third of its life left resolves at once; past that its successor is
   * signed in the background; only a caller without a usable token waits for a signature, shared by concurrent waiters.
   */
  tokenFor(caller: IdentityCaller): Promise<string>;
}

interface CachedToken {
  /** Resolved once signed; shared by every request until replaced. */
  readonly token: Promise<string>;
  /** From this instant (ms) a successor is signed in the background. */
  readonly refreshAt: number;
  /** From this instant (ms) the token is not handed out any more: too close to `exp` to reach the backend in time. */
  readonly retireAt: number;
  refreshing: boolean;
}

/** Signs with `key`; see IdentitySigner. Options are checked here, once. */
export function createIdentitySigner(options: IdentitySignerOptions): IdentitySigner {
  const { key, issuer, audience, environment, ttlSeconds = 120, maxCachedTokens = 10_000, clock = systemClock, onSigned } = options;
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TOKEN_TTL_SECONDS) {
    throw new RangeError(`ttlSeconds must be an integer from 1 to ${MAX_TOKEN_TTL_SECONDS}, not ${ttlSeconds}`);
  }
  if (!Number.isInteger(maxCachedTokens) || maxCachedTokens < 1) throw new RangeError(`maxCachedTokens must be a positive integer, not ${maxCachedTokens}`);
  if (issuer === '' || audience === '') throw new RangeError('issuer and audience must not be empty');

  const ttlMs = ttlSeconds * 1000;
  const header = { alg: key.algorithm, kid: key.kid, typ: 'JWT' } as const;
  const cache = new LRUCache<string, CachedToken>({ max: maxCachedTokens });

  function sign(caller: IdentityCaller): CachedToken {
    // iat is whole seconds; lifetimes are counted from it, so a token is never thought younger than it is.
    const issuedAtMs = Math.floor(clock.now() / 1000) * 1000;
    const token = new SignJWT({ consumer: caller.consumer, environment, operation_id: caller.operationId })
      .setProtectedHeader(header)
      .setIssuer(issuer)
      .setAudience(audience)
      .setSubject(caller.keyId)
      .setIssuedAt(issuedAtMs / 1000)
      .setExpirationTime(issuedAtMs / 1000 + ttlSeconds)
      .setJti(randomUUID())
      .sign(key.privateKey);
    return { token, refreshAt: issuedAtMs + (ttlMs * 2) / 3, retireAt: issuedAtMs + (ttlMs * 5) / 6, refreshing: false };
  }

  function signInto(cacheKey: string, caller: IdentityCaller): Promise<string> {
    const entry = sign(caller);
    cache.set(cacheKey, entry);
    entry.token.then(
      () => onSigned?.(),
      () => {
        if (cache.peek(cacheKey) === entry) cache.delete(cacheKey);
      },
    );
    return entry.token;
  }

  function refreshInBackground(cacheKey: string, caller: IdentityCaller, current: CachedToken): void {
    current.refreshing = true;
    const next = sign(caller);
    // The successor replaces the current token only once signed, so no request waits for it.
    next.token.then(
      () => {
        if (cache.peek(cacheKey) === current) cache.set(cacheKey, next);
        onSigned?.();
      },
      () => {
        current.refreshing = false;
      },
    );
  }

  return {
    tokenFor: function tokenFor(caller: IdentityCaller): Promise<string> {
      // Key ids (base64url) and operationIds hold no NUL, so with the free-form consumer name last the parts cannot run together.
      const cacheKey = `${caller.keyId}\0${caller.operationId}\0${caller.consumer}`;
      const cached = cache.get(cacheKey);
      const now = clock.now();
      if (cached === undefined || now >= cached.retireAt) return signInto(cacheKey, caller);
      if (now >= cached.refreshAt && !cached.refreshing) refreshInBackground(cacheKey, caller, cached);
      return cached.token;
    },
  };
}
