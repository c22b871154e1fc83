// Backs up the key store (export) and restores it (import): records and hashes, never a secret, a page at a time.
import type { RedisClient } from '../redis/connect.ts';
import type { Clock } from '../time/clock.ts';
import { EXPORT_FORMAT, EXPORT_VERSION, exportedLine, type ExportedKey, type ExportHeader } from './key-backup-format.ts';
import { KeyAdminError } from './key-admin-error.ts';
import { readExport } from './key-backup-file.ts';
import { readKeyPage } from './key-listing.ts';
import { fromHashFields, keyLayout, orderMember, toHashFields, type KeyEvent, type KeyLayout } from './key-records.ts';
import { claimPepperFingerprint, describePepperMismatch, readPepperFingerprint } from './pepper-fingerprint.ts';

/** Keys read, compared or written per round trip (and per transaction on import). */
const BATCH = 500;

export interface ExportOptions {
  keyPrefix: string;
  clock: Clock;
  /** Used when Redis holds no fingerprint yet (no key, or keys older than fingerprints): the CLI's pepper's. */
  fallbackFingerprint: string;
  /** Writes one line (with its newline), resolving when it may be given the next (back-pressure). */
  write(line: string): Promise<void>;
}

/**
 * The header's count is the ordered index's size after the first page (which fills the index from the id set); exactly
 * that many keys follow, so a reader can tell a whole file from a cut one. A key created during the export may be left out.
 */
export async function exportKeys(redis: RedisClient, options: ExportOptions): Promise<ExportHeader> {
  const layout = keyLayout(options.keyPrefix);
  let page = await readKeyPage(redis, layout, { limit: BATCH });
  const [keys, stored] = await Promise.all([redis.zcard(layout.order), readPepperFingerprint(redis, options.keyPrefix)]);
  const header: ExportHeader = {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    pepperFingerprint: stored ?? options.fallbackFingerprint,
    exportedAt: new Date(options.clock.now()).toISOString(),
    keys,
  };
  await options.write(`${JSON.stringify(header)}\n`);
  let written = 0;
  for (;;) {
    const records = page.records.slice(0, keys - written);
    // The listing gives records without their hash: each id's hash, in one round trip per page.
    const hashes = records.length === 0 ? [] : await redis.mget(records.map((record) => layout.byId(record.id)));
    for (const [index, record] of records.entries()) {
      const keyHash = hashes[index];
      if (!keyHash) throw new KeyAdminError('damaged', `key ${record.id} is listed but has no hash`);
      await options.write(`${exportedLine(keyHash, record)}\n`);
    }
    written += records.length;
    if (written >= keys || page.next === undefined) break;
    page = await readKeyPage(redis, layout, { cursor: page.next, limit: BATCH });
  }
  if (written < keys) throw new KeyAdminError('damaged', `the key index listed ${keys} keys but the listing gave ${written}; export again`);
  return header;
}

export interface ImportOptions {
  keyPrefix: string;
  /** The CLI's configured pepper's: a file made with another pepper would restore keys no gateway can match. */
  fingerprint: string;
  dryRun: boolean;
  /** Told when this import recorded the fingerprint beside keys that had none (as KeyAdmin's `onPepperRecorded`). */
  onPepperRecorded?: (existingKeys: number) => void;
}

export interface ImportSummary {
  created: number;
  changed: number;
  unchanged: number;
  /** Keys revoked in Redis but not in the file: kept revoked (a restore never undoes a revocation). Counted in the three above too. */
  keptRevoked: number;
  dryRun: boolean;
}

type Outcome = 'created' | 'changed' | 'unchanged';

interface Planned {
  key: ExportedKey;
  outcome: Outcome;
  /** What Redis held before, when it differs in creation instant (its index member is replaced). */
  staleMember?: string;
  keptRevoked: boolean;
}

/** Compares each key with what Redis holds; an id or hash already taken by another key is refused (the file cannot win that). */
async function plan(redis: RedisClient, layout: KeyLayout, batch: ReadonlyArray<[number, ExportedKey]>): Promise<Planned[]> {
  const pipeline = redis.pipeline();
  for (const [, key] of batch) pipeline.get(layout.byId(key.id)).hgetall(layout.record(key.keyHash));
  const replies = (await pipeline.exec()) ?? [];
  return batch.map(([number, key], index) => {
    const [hashError, hashOfId] = replies[index * 2] ?? [new Error('no reply')];
    const [fieldsError, fields] = replies[index * 2 + 1] ?? [new Error('no reply')];
    if (hashError) throw hashError;
    if (fieldsError) throw fieldsError;
    const held = fields as Record<string, string>;
    if (hashOfId !== null && hashOfId !== key.keyHash)
      throw new KeyAdminError('conflict', `line ${number}: key ${key.id} exists in Redis with another hash; nothing was written`);
    if (held.id !== undefined && held.id !== key.id)
      throw new KeyAdminError('conflict', `line ${number}: the hash of key ${key.id} belongs to key ${held.id} in Redis; nothing was written`);
    const existing = fromHashFields(held);
    if (hashOfId === null && existing === undefined) return { key, outcome: 'created', keptRevoked: false };
    // A revocation is never undone by a restore: a key revoked since the export may have leaked.
    const keptRevoked = existing?.revoked === true && !key.revoked;
    const wanted: ExportedKey = keptRevoked ? { ...key, revoked: true } : key;
    const same = existing !== undefined && hashOfId !== null && sameFields(toHashFields(existing), toHashFields(wanted));
    return {
      key: wanted,
      outcome: same ? 'unchanged' : 'changed',
      keptRevoked,
      ...(existing !== undefined && existing.createdAt !== key.createdAt ? { staleMember: orderMember(existing) } : {}),
    };
  });
}

function sameFields(a: Record<string, string>, b: Record<string, string>): boolean {
  const names = Object.keys(a);
  return names.length === Object.keys(b).length && names.every((name) => a[name] === b[name]);
}

/** A file `checkExportFile` read whole without Redis: the only kind `importKeys` takes. */
export interface CheckedExport {
  readonly file: string;
  readonly header: ExportHeader;
  readonly checked: true;
}

/**
 * Reads the file once without asking Redis: the header's pepper fingerprint against the CLI's (refused at the first
 * line), then every line's size (MAX_EXPORT_LINE_BYTES), syntax and uniqueness, and the count. Memory: one batch.
 */
export async function checkExportFile(file: string, fingerprint: string): Promise<CheckedExport> {
  let header: ExportHeader | undefined;
  const onHeader = (read: ExportHeader) => {
    if (read.pepperFingerprint !== fingerprint)
      throw new KeyAdminError(
        'pepper_mismatch',
        `refusing to import: the file's keys were made with another pepper than this CLI's (API_KEY_PEPPER or API_KEY_PEPPER_FILE); nothing was written`,
      );
    header = read;
  };
  for await (const _batch of readExport(file, BATCH, onHeader)) {
    // Checked as read; kept only one batch at a time.
  }
  return { file, header: header!, checked: true };
}

/** Whether the file's pepper is the target Redis's; in an empty Redis it is claimed (not in a dry run). The CLI's was checked with the file. */
async function checkPepper(redis: RedisClient, header: ExportHeader, options: ImportOptions): Promise<void> {
  const stored = await readPepperFingerprint(redis, options.keyPrefix);
  if (stored !== null && stored !== header.pepperFingerprint)
    throw new KeyAdminError('pepper_mismatch', `refusing to import: ${describePepperMismatch(stored, options.fingerprint)}; nothing was written`);
  if (options.dryRun) return;
  const claim = await claimPepperFingerprint(redis, options.keyPrefix, options.fingerprint);
  if (claim.outcome === 'differs')
    throw new KeyAdminError('pepper_mismatch', `refusing to import: ${describePepperMismatch(claim.stored, options.fingerprint)}; nothing was written`);
  if (claim.outcome === 'recorded' && claim.existingKeys > 0) options.onPepperRecorded?.(claim.existingKeys);
}

/** One transaction per batch: each key's record, id, set and index entries together, and the epoch moved by the keys written. */
async function write(redis: RedisClient, layout: KeyLayout, planned: readonly Planned[]): Promise<void> {
  const changes = planned.filter((each) => each.outcome !== 'unchanged');
  if (changes.length === 0) return;
  const transaction = redis.multi();
  for (const { key, staleMember } of changes) {
    const { keyHash, ...record } = key;
    // Replaced whole: a field the file does not have (a limit removed since) must not survive from Redis.
    transaction.del(layout.record(keyHash)).hset(layout.record(keyHash), toHashFields(record)).set(layout.byId(key.id), keyHash).sadd(layout.ids, key.id);
    if (staleMember !== undefined) transaction.zrem(layout.order, staleMember);
    transaction.zadd(layout.order, 0, orderMember(record));
  }
  transaction.incrby(layout.eventsEpoch, changes.length);
  const replies = await transaction.exec();
  if (replies === null) throw new Error('the import was not applied (transaction discarded)');
  for (const [error] of replies) if (error) throw error;
  const epoch = Number(replies.at(-1)?.[1]);
  // Numbered as one change each, so a replica sees consecutive events (no "skipped" cache drop) and evicts each key.
  const events = redis.pipeline();
  for (const [index, { key }] of changes.entries()) {
    const event: KeyEvent = { type: 'changed', keyHash: key.keyHash, epoch: epoch - changes.length + index + 1 };
    events.publish(layout.events, JSON.stringify(event));
  }
  await events.exec();
}

/**
 * Restores a file from `exportKeys`, once `checkExportFile` has read it without Redis. Reads it twice more: once to
 * compare every line with Redis (nothing is written if any conflicts), once to write. Running it again changes nothing.
 */
export async function importKeys(redis: RedisClient, checked: CheckedExport, options: ImportOptions): Promise<ImportSummary> {
  const layout = keyLayout(options.keyPrefix);
  const { file, header } = checked;
  const summary: ImportSummary = { created: 0, changed: 0, unchanged: 0, keptRevoked: 0, dryRun: options.dryRun };
  for await (const batch of readExport(file, BATCH, () => undefined)) {
    for (const each of await plan(redis, layout, batch)) {
      summary[each.outcome] += 1;
      if (each.keptRevoked) summary.keptRevoked += 1;
    }
  }
  await checkPepper(redis, header, options);
  if (options.dryRun) return summary;
  for await (const batch of readExport(file, BATCH, () => undefined)) await write(redis, layout, await plan(redis, layout, batch));
  return summary;
}
