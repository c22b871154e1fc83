// A key as the admin API writes it (config/admin.openapi.yaml, `Key`), and back: the server and the CLI's remote mode share it.
import type { IssuedKey, RotatedKey } from '../auth/key-admin.ts';
import type { KeyRecord } from '../auth/key-store.ts';
import type { Environment, StabilityMarker } from '../config/schema.ts';

/** `name` and `optIn` are the words of the API's request bodies; the record's are `consumer` and `optedIn`. */
export interface ApiKey {
  id: string;
  name: string;
  environments: readonly Environment[];
  createdAt: string;
  revoked: boolean;
  expiresAt?: string;
  rateLimitPerMinute?: number;
  optIn?: readonly StabilityMarker[];
}

export type ApiIssuedKey = ApiKey & { key: string };
export type ApiRotatedKey = ApiIssuedKey & { previous: ApiKey };

export function toApiKey(record: KeyRecord): ApiKey {
  return {
    id: record.id,
    name: record.consumer,
    environments: record.environments,
    createdAt: record.createdAt,
    revoked: record.revoked,
    ...(record.expiresAt === undefined ? {} : { expiresAt: record.expiresAt }),
    ...(record.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: record.rateLimitPerMinute }),
    ...(record.optedIn === undefined ? {} : { optIn: record.optedIn }),
  };
}

export function fromApiKey(key: ApiKey): KeyRecord {
  return {
    id: key.id,
    consumer: key.name,
    environments: key.environments,
    createdAt: key.createdAt,
    // In the order the Redis path prints a record, so the CLI's JSON is the same either way.
    revoked: key.revoked,
    ...(key.expiresAt === undefined ? {} : { expiresAt: key.expiresAt }),
    ...(key.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: key.rateLimitPerMinute }),
    ...(key.optIn === undefined ? {} : { optedIn: key.optIn }),
  };
}

export const toApiIssuedKey = (issued: IssuedKey): ApiIssuedKey => ({ ...toApiKey(issued.record), key: issued.key });

export const fromApiIssuedKey = ({ key, ...rest }: ApiIssuedKey): IssuedKey => ({ key, record: fromApiKey(rest) });

export const toApiRotatedKey = ({ issued, previous }: RotatedKey): ApiRotatedKey => ({ ...toApiIssuedKey(issued), previous: toApiKey(previous) });

export const fromApiRotatedKey = ({ previous, ...issued }: ApiRotatedKey): RotatedKey => ({ issued: fromApiIssuedKey(issued), previous: fromApiKey(previous) });
