// How key records are laid out in Redis: one hash per key hash, the id indexes, and the events channel.
import type { Environment, StabilityMarker } from '../config/schema.ts';
import { ENVIRONMENTS, STABILITY_MARKERS } from '../config/schema.ts';
import type { KeyRecord } from './key-store.ts';

export interface KeyLayout {
  /** HASH: the record of the key with this hash. */
  record(keyHash: string): string;
  /** STRING: the key hash of the record with this id. */
  byId(id: string): string;
  /** SET: every key id (what versions before the ordered index list, and what the pepper claim counts). */
  ids: string;
  /**
   * ZSET, scores 0, members `createdAt|id`: lexicographic order is creation order, and a page resumes after its last
   * member (ZRANGE BYLEX). Written with `ids` in one transaction; filled from `ids` where older versions wrote only that.
   */
  order: string;
  /** Pub/sub channel on which key changes are announced to every gateway replica. */
  events: string;
  /** STRING: how many key changes have been announced (each event carries its number), for replicas to notice one they missed. */
  eventsEpoch: string;
  /** STRING: the fingerprint of the pepper the keys were made with (src/auth/pepper-fingerprint.ts). */
  pepperFingerprint: string;
}

/** Every name carries the hash tag `{keys}`: one Cluster slot, so the key CLI's multi-key transactions stay legal. */
export function keyLayout(prefix: string): KeyLayout {
  return {
    record: (keyHash) => `${prefix}{keys}:key:${keyHash}`,
    byId: (id) => `${prefix}{keys}:key-id:${id}`,
    ids: `${prefix}{keys}:key-ids`,
    order: `${prefix}{keys}:key-order`,
    events: `${prefix}key-events`,
    eventsEpoch: `${prefix}{keys}:key-events-epoch`,
    pepperFingerprint: `${prefix}{keys}:pepper-fingerprint`,
  };
}

/** A key's member of `order`: its creation instant (ISO 8601 in UTC, fixed width, so it sorts as text) and its id. */
export const orderMember = (record: Pick<KeyRecord, 'createdAt' | 'id'>): string => `${record.createdAt}|${record.id}`;

/** The id in an `order` member. */
export const idOfOrderMember = (member: string): string => member.slice(member.indexOf('|') + 1);

/** Announced on the events channel; carries the key hash (the lookup handle), never the key. */
export interface KeyEvent {
  type: 'revoked' | 'changed';
  keyHash: string;
  /** The change's number (the epoch after it), from this version on; absent in events of older ones. */
  epoch?: number;
}

export function toHashFields(record: KeyRecord): Record<string, string> {
  return {
    id: record.id,
    consumer: record.consumer,
    environments: record.environments.join(','),
    createdAt: record.createdAt,
    revoked: record.revoked ? '1' : '0',
    ...(record.expiresAt === undefined ? {} : { expiresAt: record.expiresAt }),
    ...(record.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: String(record.rateLimitPerMinute) }),
    ...(record.quotaPerDay === undefined ? {} : { quotaPerDay: String(record.quotaPerDay) }),
    ...(record.quotaPerMonth === undefined ? {} : { quotaPerMonth: String(record.quotaPerMonth) }),
    ...(record.optedIn === undefined || record.optedIn.length === 0 ? {} : { optedIn: record.optedIn.join(',') }),
    ...(record.rotatedTo === undefined ? {} : { rotatedTo: record.rotatedTo }),
  };
}

/** A stored count (a limit, a quota) that reads back as a positive integer; anything else is as if unset. */
function positiveCount(field: string | undefined): number | undefined {
  if (field === undefined) return undefined;
  const value = Number(field);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** A record that does not read back whole is treated as absent: authentication then refuses the key. */
export function fromHashFields(fields: Record<string, string>): KeyRecord | undefined {
  if (!fields.id || !fields.consumer || !fields.createdAt || fields.revoked === undefined) return undefined;
  const environments = (fields.environments ?? '').split(',').filter((value): value is Environment => (ENVIRONMENTS as readonly string[]).includes(value));
  const limit = positiveCount(fields.rateLimitPerMinute);
  const perDay = positiveCount(fields.quotaPerDay);
  const perMonth = positiveCount(fields.quotaPerMonth);
  // Unknown markers are dropped: opting in can only widen access to what the gateway knows.
  const optedIn = (fields.optedIn ?? '').split(',').filter((value): value is StabilityMarker => (STABILITY_MARKERS as readonly string[]).includes(value));
  return {
    id: fields.id,
    consumer: fields.consumer,
    environments,
    createdAt: fields.createdAt,
    revoked: fields.revoked === '1',
    ...(fields.expiresAt ? { expiresAt: fields.expiresAt } : {}),
    ...(limit === undefined ? {} : { rateLimitPerMinute: limit }),
    ...(perDay === undefined ? {} : { quotaPerDay: perDay }),
    ...(perMonth === undefined ? {} : { quotaPerMonth: perMonth }),
    ...(optedIn.length > 0 ? { optedIn } : {}),
    ...(fields.rotatedTo ? { rotatedTo: fields.rotatedTo } : {}),
  };
}
