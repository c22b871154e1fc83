// What the gateway knows about an API key, and the interface every key store implements.
import type { Environment, StabilityMarker } from '../config/schema.ts';

/** A key as stored: never the key itself, only its hash (the lookup handle) and what it grants. */
export interface KeyRecord {
  /** Stable identifier, safe to log and to show operators. */
  id: string;
  /** Who holds the key. */
  consumer: string;
  environments: readonly Environment[];
  createdAt: string;
  expiresAt?: string;
  revoked: boolean;
  /** Per-key override of the rate limit, requests per minute. */
  rateLimitPerMinute?: number;
  /** Requests admitted per UTC calendar day, across replicas; none: no daily quota. */
  quotaPerDay?: number;
  /** Requests admitted per UTC calendar month, across replicas; none: no monthly quota. */
  quotaPerMonth?: number;
  /** Stability markers this key opted in to: where config says `opt-in`, only such keys call those operations. */
  optedIn?: readonly StabilityMarker[];
  /** The id of the key this one was rotated to: a key is rotated once (src/auth/key-rotation.ts). */
  rotatedTo?: string;
}

/** The authenticated caller as the rest of the pipeline sees it. */
export interface Consumer {
  keyId: string;
  name: string;
  rateLimitPerMinute?: number;
  quotaPerDay?: number;
  quotaPerMonth?: number;
  optedIn?: readonly StabilityMarker[];
}

/** For the stages after authentication; a missing caller there is a gateway bug (500). */
export function callerOf(record: { caller?: Consumer | undefined }): Consumer {
  if (!record.caller) throw new Error('no caller in the request record: a stage runs before authentication');
  return record.caller;
}

/** Raised by a store that cannot answer (Redis unreachable, timed out). Authentication fails closed on it. */
export class KeyStoreUnavailableError extends Error {
  override name = 'KeyStoreUnavailableError';
}

/** Where a cache writes whether it answered a lookup (`hit`) or asked its store (`miss`, when: monotonic ms); else nothing. */
export interface KeyLookupFacts {
  keyCache: 'hit' | 'miss' | undefined;
  lookupStartMs: number;
}

export interface KeyStore {
  /** The record stored under this key hash, or undefined when there is none. Throws KeyStoreUnavailableError. */
  findByHash(keyHash: string, facts?: KeyLookupFacts): Promise<KeyRecord | undefined>;
}
