// A key as the admin API writes it (config/admin.openapi.yaml, `Key`), and back: the server and the CLI's remote mode share it.
import type { IssuedKey, RotatedKey } from '../auth/key-admin.ts';
import type { KeyRecord } from '../auth/key-store.ts';
import type { Environment, StabilityMarker } from '../config/schema.ts';

/** `optIn` is the word of the API's request bodies; the record's is `optedIn`. The holder is `consumer` everywhere. */
export interface ApiKey {
  id: string;
  consumer: string;
  /** @deprecated `consumer`'s 1.0 spelling, answered beside it until the next minor version for scripts reading `name`. */
  name: string;
  environments: readonly Environment[];
  createdAt: string;
  revoked: boolean;
  expiresAt?: string;
  rateLimitPerMinute?: number;
  quotaPerDay?: number;
  quotaPerMonth?: number;
  optIn?: readonly StabilityMarker[];
  rotatedTo?: string;
}

/** A key as any gateway answers it: 1.0 says only `name`, 1.1 both, a later version only `consumer`. */
export type AnsweredKey = Omit<ApiKey, 'consumer' | 'name'> & ({ consumer: string; name?: string } | { consumer?: undefined; name: string });

export type ApiIssuedKey = ApiKey & { key: string };
export type AnsweredIssuedKey = AnsweredKey & { key: string };
export type ApiRotatedKey = ApiIssuedKey & { previous: ApiKey };
export type AnsweredRotatedKey = AnsweredIssuedKey & { previous: AnsweredKey };

export function toApiKey(record: KeyRecord): ApiKey {
  return {
    id: record.id,
    consumer: record.consumer,
    name: record.consumer,
    environments: record.environments,
    createdAt: record.createdAt,
    revoked: record.revoked,
    ...(record.expiresAt === undefined ? {} : { expiresAt: record.expiresAt }),
    ...(record.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: record.rateLimitPerMinute }),
    ...(record.quotaPerDay === undefined ? {} : { quotaPerDay: record.quotaPerDay }),
    ...(record.quotaPerMonth === undefined ? {} : { quotaPerMonth: record.quotaPerMonth }),
    ...(record.optedIn === undefined ? {} : { optIn: record.optedIn }),
    ...(record.rotatedTo === undefined ? {} : { rotatedTo: record.rotatedTo }),
  };
}

export function fromApiKey(key: AnsweredKey): KeyRecord {
  return {
    id: key.id,
    consumer: key.consumer === undefined ? key.name : key.consumer,
    environments: key.environments,
    createdAt: key.createdAt,
    // In the order the Redis path prints a record, so the CLI's JSON is the same either way.
    revoked: key.revoked,
    ...(key.expiresAt === undefined ? {} : { expiresAt: key.expiresAt }),
    ...(key.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: key.rateLimitPerMinute }),
    ...(key.quotaPerDay === undefined ? {} : { quotaPerDay: key.quotaPerDay }),
    ...(key.quotaPerMonth === undefined ? {} : { quotaPerMonth: key.quotaPerMonth }),
    ...(key.optIn === undefined ? {} : { optedIn: key.optIn }),
    ...(key.rotatedTo === undefined ? {} : { rotatedTo: key.rotatedTo }),
  };
}

export const toApiIssuedKey = (issued: IssuedKey): ApiIssuedKey => ({ ...toApiKey(issued.record), key: issued.key });

export const fromApiIssuedKey = ({ key, ...rest }: AnsweredIssuedKey): IssuedKey => ({ key, record: fromApiKey(rest) });

export const toApiRotatedKey = ({ issued, previous }: RotatedKey): ApiRotatedKey => ({ ...toApiIssuedKey(issued), previous: toApiKey(previous) });

export const fromApiRotatedKey = ({ previous, ...issued }: AnsweredRotatedKey): RotatedKey => ({
  issued: fromApiIssuedKey(issued),
  previous: fromApiKey(previous),
});
