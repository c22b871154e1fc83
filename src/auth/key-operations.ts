// The key operations as the CLI and the admin API see them: done on Redis (KeyAdmin) or asked of a gateway (src/cli/admin-client.ts).
import type { Environment, StabilityMarker } from '../config/schema.ts';
import type { KeyPage, PageRequest } from './key-listing.ts';
import type { QuotaChange } from './key-quota.ts';
import type { KeyRecord } from './key-store.ts';

/** The key operations, done on Redis (KeyAdmin) or asked of a gateway's admin API (src/cli/admin-client.ts). */
export interface KeyOperations {
  create(input: NewKey): Promise<IssuedKey>;
  show(id: string): Promise<KeyRecord>;
  /** One page, oldest first; a page that cannot be read whole fails (never a shorter one). */
  list(request?: PageRequest): Promise<KeyPage>;
  /** Every page, in order: all keys, a page at a time (bounded memory). */
  pages(limit?: number): AsyncIterable<readonly KeyRecord[]>;
  revoke(id: string): Promise<KeyRecord>;
  setRateLimit(id: string, perMinute: number): Promise<KeyRecord>;
  setOptIn(id: string, markers: readonly StabilityMarker[]): Promise<KeyRecord>;
  /** Sets (a number), removes (null) or leaves (absent) each quota; a change naming neither is refused 'invalid'. */
  setQuota(id: string, change: QuotaChange): Promise<KeyRecord>;
  rotate(id: string, overlapSeconds?: number): Promise<RotatedKey>;
}

/** A rotation: the new key, and the old one's record (revoked, or expiring after the overlap). */
export interface RotatedKey {
  issued: IssuedKey;
  previous: KeyRecord;
}

export interface NewKey {
  consumer: string;
  environments: readonly Environment[];
  expiresAt?: string;
  rateLimitPerMinute?: number;
  /** Requests admitted per UTC day; a positive safe integer. */
  quotaPerDay?: number;
  /** Requests admitted per UTC month; a positive safe integer. */
  quotaPerMonth?: number;
  /** Stability markers the key opts in to (served where config says `opt-in`). */
  optedIn?: readonly StabilityMarker[];
}

/** A created key: the only time the secret exists outside the caller's hands. */
export interface IssuedKey {
  key: string;
  record: KeyRecord;
}
