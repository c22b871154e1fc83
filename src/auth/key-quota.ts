// A key's quotas as operators give them (create, setQuota): checked once, then turned into the record's hash fields.
import { KeyAdminError } from './key-admin-error.ts';

/** A change of a key's quotas: absent leaves one as it is, null removes it, a number sets it. */
export interface QuotaChange {
  perDay?: number | null;
  perMonth?: number | null;
}

/** The hash fields a change writes and the ones it removes (src/auth/key-records.ts). */
export interface QuotaFields {
  set: Record<string, string>;
  removed: string[];
}

/**
 * Refuses a quota that is not a positive safe integer. A record holding anything else reads back as no quota
 * (key-records.ts), so accepting one would silently leave the key unlimited.
 */
export function checkQuota(name: string, value: unknown): void {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return;
  throw new KeyAdminError('invalid', `${name} must be a whole number of requests from 1 to ${Number.MAX_SAFE_INTEGER}, not ${String(value)}`);
}

/** What `change` writes; one that names neither quota is refused, as it would change nothing yet move the epoch. */
export function quotaFields(change: QuotaChange): QuotaFields {
  const named = [
    ['perDay', 'quotaPerDay', change.perDay],
    ['perMonth', 'quotaPerMonth', change.perMonth],
  ] as const;
  if (named.every(([, , value]) => value === undefined)) throw new KeyAdminError('invalid', 'a quota change names perDay, perMonth or both');
  const fields: QuotaFields = { set: {}, removed: [] };
  for (const [name, field, value] of named) {
    if (value === undefined) continue;
    if (value === null) fields.removed.push(field);
    else {
      checkQuota(name, value);
      fields.set[field] = String(value);
    }
  }
  return fields;
}
