// The key export's format (an interface: docs/reference.md, "Key export format"): a header line, then one JSON line per key.
import { ENVIRONMENTS, STABILITY_MARKERS, type Environment, type StabilityMarker } from '../config/schema.ts';
import { consumerNameProblem } from './consumer-name.ts';
import type { KeyRecord } from './key-store.ts';

export const EXPORT_FORMAT = 'petstore-gateway-keys';
export const EXPORT_VERSION = 1;

/** The first line. `keys` is how many lines follow: a file cut short is refused, not half restored. */
export interface ExportHeader {
  format: typeof EXPORT_FORMAT;
  version: typeof EXPORT_VERSION;
  /** The fingerprint of the pepper the hashes were made with (never the pepper). */
  pepperFingerprint: string;
  exportedAt: string;
  keys: number;
}

/** A key as exported: its record and its hash (the lookup handle); never the key itself, which the gateway never holds. */
export type ExportedKey = KeyRecord & { keyHash: string };

/** A line that is not what this version writes: the import stops before writing anything, naming the line. */
export class ExportLineError extends Error {
  override name = 'ExportLineError';
}

/** Fields always in the documented order (docs/reference.md), so two exports diff line by line. */
export function exportedLine(keyHash: string, record: KeyRecord): string {
  const line: ExportedKey = {
    keyHash,
    id: record.id,
    consumer: record.consumer,
    environments: record.environments,
    createdAt: record.createdAt,
    ...(record.expiresAt === undefined ? {} : { expiresAt: record.expiresAt }),
    revoked: record.revoked,
    ...(record.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: record.rateLimitPerMinute }),
    ...(record.quotaPerDay === undefined ? {} : { quotaPerDay: record.quotaPerDay }),
    ...(record.quotaPerMonth === undefined ? {} : { quotaPerMonth: record.quotaPerMonth }),
    ...(record.optedIn === undefined ? {} : { optedIn: record.optedIn }),
    ...(record.rotatedTo === undefined ? {} : { rotatedTo: record.rotatedTo }),
  };
  return JSON.stringify(line);
}

const KEY_HASH = /^[0-9a-f]{64}$/;
const KEY_ID = /^key_[A-Za-z0-9_-]{1,64}$/;
const RECORD_FIELDS = new Set([
  'keyHash',
  'id',
  'consumer',
  'environments',
  'createdAt',
  'expiresAt',
  'revoked',
  'rateLimitPerMinute',
  'quotaPerDay',
  'quotaPerMonth',
  'optedIn',
  'rotatedTo',
]);

function objectOf(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ExportLineError('not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ExportLineError('not a JSON object');
  return value as Record<string, unknown>;
}

/** An instant as the gateway writes it (toISOString): fixed width, so the ordered index sorts it as text. */
function instant(value: unknown, field: string): string {
  if (typeof value !== 'string' || Number.isNaN(Date.parse(value)) || new Date(Date.parse(value)).toISOString() !== value)
    throw new ExportLineError(`${field} is not an ISO 8601 instant in UTC with milliseconds`);
  return value;
}

function count(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw new ExportLineError(`${field} is not a positive integer`);
  return value;
}

function listOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T[] {
  if (!Array.isArray(value) || !value.every((each) => typeof each === 'string' && (allowed as readonly string[]).includes(each)))
    throw new ExportLineError(`${field} is not a list of ${allowed.join(', ')}`);
  return [...new Set(value as T[])];
}

export function parseHeader(text: string): ExportHeader {
  const header = objectOf(text);
  if (header.format !== EXPORT_FORMAT) throw new ExportLineError(`not a key export (format is not "${EXPORT_FORMAT}")`);
  if (header.version !== EXPORT_VERSION) throw new ExportLineError(`version ${JSON.stringify(header.version)} is not one this CLI reads (${EXPORT_VERSION})`);
  if (typeof header.pepperFingerprint !== 'string' || header.pepperFingerprint === '') throw new ExportLineError('pepperFingerprint is missing');
  if (typeof header.keys !== 'number' || !Number.isSafeInteger(header.keys) || header.keys < 0) throw new ExportLineError('keys is not a count');
  return {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    pepperFingerprint: header.pepperFingerprint,
    exportedAt: instant(header.exportedAt, 'exportedAt'),
    keys: header.keys,
  };
}

/** A key line, checked as strictly as the CLI checks a new key: what would read back damaged from Redis is refused here. */
export function parseKeyLine(text: string): ExportedKey {
  const line = objectOf(text);
  const unknown = Object.keys(line).find((field) => !RECORD_FIELDS.has(field));
  if (unknown !== undefined) throw new ExportLineError(`unknown field ${JSON.stringify(unknown)}`);
  if (typeof line.keyHash !== 'string' || !KEY_HASH.test(line.keyHash)) throw new ExportLineError('keyHash is not 64 lowercase hex digits');
  if (typeof line.id !== 'string' || !KEY_ID.test(line.id)) throw new ExportLineError('id is not a key id');
  if (typeof line.consumer !== 'string') throw new ExportLineError('consumer is missing');
  const problem = consumerNameProblem(line.consumer);
  if (problem !== undefined) throw new ExportLineError(`consumer: ${problem}`);
  const environments = listOf<Environment>(line.environments, 'environments', ENVIRONMENTS);
  if (environments.length === 0) throw new ExportLineError('environments is empty');
  if (typeof line.revoked !== 'boolean') throw new ExportLineError('revoked is not true or false');
  if (line.rotatedTo !== undefined && (typeof line.rotatedTo !== 'string' || !KEY_ID.test(line.rotatedTo)))
    throw new ExportLineError('rotatedTo is not a key id');
  const optedIn = line.optedIn === undefined ? [] : listOf<StabilityMarker>(line.optedIn, 'optedIn', STABILITY_MARKERS);
  return {
    keyHash: line.keyHash,
    id: line.id,
    consumer: line.consumer,
    environments,
    createdAt: instant(line.createdAt, 'createdAt'),
    revoked: line.revoked,
    ...(line.expiresAt === undefined ? {} : { expiresAt: instant(line.expiresAt, 'expiresAt') }),
    ...(line.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: count(line.rateLimitPerMinute, 'rateLimitPerMinute') }),
    ...(line.quotaPerDay === undefined ? {} : { quotaPerDay: count(line.quotaPerDay, 'quotaPerDay') }),
    ...(line.quotaPerMonth === undefined ? {} : { quotaPerMonth: count(line.quotaPerMonth, 'quotaPerMonth') }),
    ...(optedIn.length === 0 ? {} : { optedIn }),
    ...(line.rotatedTo === undefined ? {} : { rotatedTo: line.rotatedTo }),
  };
}
