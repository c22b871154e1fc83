// What operators do with keys: create, list, show, revoke, rotate, set a rate limit or quotas. Behind the CLI and the admin API alike.
import type { RedisClient } from '../redis/connect.ts';
import type { StabilityMarker } from '../config/schema.ts';
import type { Clock } from '../time/clock.ts';
import { generateApiKey, generateKeyId } from './api-key.ts';
import { consumerNameProblem } from './consumer-name.ts';
import { KeyAdminError } from './key-admin-error.ts';
import { publishKeyEvent } from './key-events.ts';
import type { PepperedKeyHasher } from './key-hash.ts';
import { readKeyPage, type KeyPage, type PageRequest } from './key-listing.ts';
import type { IssuedKey, KeyOperations, NewKey, RotatedKey } from './key-operations.ts';
import { checkQuota, quotaFields, type QuotaChange } from './key-quota.ts';
import { claimPepperFingerprint, describePepperMismatch, readPepperFingerprint } from './pepper-fingerprint.ts';
import { fromHashFields, keyLayout, orderMember, toHashFields, type KeyEvent, type KeyLayout } from './key-records.ts';
import { rotateOnce } from './key-rotation.ts';
import type { KeyRecord } from './key-store.ts';

export { KeyAdminError, type KeyAdminRefusal } from './key-admin-error.ts';
export type { KeyPage, PageRequest } from './key-listing.ts';
export type { IssuedKey, KeyOperations, NewKey, RotatedKey } from './key-operations.ts';
export type { QuotaChange } from './key-quota.ts';

export interface KeyAdminOptions {
  keyPrefix: string;
  /** From `createKeyHasher`: its pepper fingerprint is checked against the keys' before a key is written. */
  hashKey: PepperedKeyHasher;
  clock: Clock;
  /** Told when this admin recorded its pepper's fingerprint beside older keys, assumed made with the same pepper. */
  onPepperRecorded?: (existingKeys: number) => void;
  /** Told when a write that does not depend on the pepper (revoke, limits, opt-in) ran with another pepper than the keys'. */
  onPepperMismatch?: (message: string) => void;
  /** Told when a change was made but not announced: not undone, as replicas see the epoch it moved within a second. */
  onAnnouncementFailed?: (keyId: string, error: unknown) => void;
}

export class KeyAdmin implements KeyOperations {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #layout: KeyLayout;
  readonly #hashKey: PepperedKeyHasher;
  readonly #clock: Clock;
  readonly #options: KeyAdminOptions;

  constructor(redis: RedisClient, options: KeyAdminOptions) {
    this.#redis = redis;
    this.#prefix = options.keyPrefix;
    this.#layout = keyLayout(options.keyPrefix);
    this.#hashKey = options.hashKey;
    this.#clock = options.clock;
    this.#options = options;
  }

  async create(input: NewKey): Promise<IssuedKey> {
    const problem = consumerNameProblem(input.consumer);
    if (problem !== undefined) throw new KeyAdminError('invalid', problem);
    if (input.environments.length === 0) throw new KeyAdminError('invalid', 'a key needs at least one environment');
    if (input.quotaPerDay !== undefined) checkQuota('quotaPerDay', input.quotaPerDay);
    if (input.quotaPerMonth !== undefined) checkQuota('quotaPerMonth', input.quotaPerMonth);
    if (input.expiresAt === undefined) return this.#issue(input);
    const expiresAt = Date.parse(input.expiresAt);
    if (!(expiresAt > this.#clock.now())) throw new KeyAdminError('invalid', 'expiresAt must be a date-time in the future');
    return this.#issue({ ...input, expiresAt: new Date(expiresAt).toISOString() });
  }

  /** Writes a new key. */
  async #issue(input: NewKey): Promise<IssuedKey> {
    await this.#claimPepper();
    const { key, keyHash, record } = this.#newKey(input);
    await this.#redis
      .multi()
      .hset(this.#layout.record(keyHash), toHashFields(record))
      .set(this.#layout.byId(record.id), keyHash)
      .sadd(this.#layout.ids, record.id)
      .zadd(this.#layout.order, 0, orderMember(record))
      .exec();
    return { key, record };
  }

  /** A new key and its record, not yet stored. */
  #newKey(input: NewKey): IssuedKey & { keyHash: string } {
    const key = generateApiKey(input.environments);
    const record: KeyRecord = {
      id: generateKeyId(),
      consumer: input.consumer,
      environments: [...new Set(input.environments)],
      createdAt: new Date(this.#clock.now()).toISOString(),
      revoked: false,
      ...(input.expiresAt === undefined ? {} : { expiresAt: input.expiresAt }),
      ...(input.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: input.rateLimitPerMinute }),
      ...(input.quotaPerDay === undefined ? {} : { quotaPerDay: input.quotaPerDay }),
      ...(input.quotaPerMonth === undefined ? {} : { quotaPerMonth: input.quotaPerMonth }),
      ...(input.optedIn === undefined || input.optedIn.length === 0 ? {} : { optedIn: [...new Set(input.optedIn)] }),
    };
    return { key, keyHash: this.#hashKey(key), record };
  }

  async show(id: string): Promise<KeyRecord> {
    const { record } = await this.#find(id);
    return record;
  }

  async list(request: PageRequest = {}): Promise<KeyPage> {
    return readKeyPage(this.#redis, this.#layout, request);
  }

  async *pages(limit?: number): AsyncIterable<readonly KeyRecord[]> {
    let page = await this.list(limit === undefined ? {} : { limit });
    yield page.records;
    while (page.next !== undefined) {
      page = await this.list({ cursor: page.next, ...(limit === undefined ? {} : { limit }) });
      yield page.records;
    }
  }

  async revoke(id: string): Promise<KeyRecord> {
    return this.#update(id, { revoked: '1' }, 'revoked');
  }

  async setRateLimit(id: string, perMinute: number): Promise<KeyRecord> {
    return this.#update(id, { rateLimitPerMinute: String(perMinute) }, 'changed');
  }

  /** Replaces the stability markers the key opted in to; none clears them. Every gateway sees it within a second. */
  async setOptIn(id: string, markers: readonly StabilityMarker[]): Promise<KeyRecord> {
    return this.#update(id, { optedIn: [...new Set(markers)].join(',') }, 'changed');
  }

  /** Sets, removes or leaves each quota (QuotaChange); every gateway sees it within a second. */
  async setQuota(id: string, change: QuotaChange): Promise<KeyRecord> {
    const { set, removed } = quotaFields(change);
    return this.#update(id, set, 'changed', removed);
  }

  /**
   * A new secret for the same consumer and grants (quotas included). The old key is revoked at once, or expires after the overlap (or
   * its own expiry, if earlier). A key is rotated once: another rotation is refused, naming the successor.
   */
  async rotate(id: string, overlapSeconds = 0): Promise<RotatedKey> {
    const { keyHash, record } = await this.#find(id);
    const refused = rotationRefusal(id, record);
    if (refused) throw refused;
    await this.#claimPepper();
    // The script copies the grants as they stand when it runs; no operation changes the environments read here.
    const { key, keyHash: successorHash, record: successor } = this.#newKey({ consumer: record.consumer, environments: record.environments });
    const revokes = !(overlapSeconds > 0);
    const rotated = await rotateOnce(this.#redis, this.#layout, {
      old: { keyHash, record },
      successor: { keyHash: successorHash, record: successor },
      ...(revokes ? {} : { overlapEndsAt: new Date(this.#clock.now() + overlapSeconds * 1000).toISOString() }),
    });
    if (rotated.outcome === 'gone') throw new KeyAdminError('not_found', `no key with id ${id}`);
    // Another rotation or a revocation came first, between the read above and the script: refused as if read then.
    if (rotated.outcome === 'already_rotated') throw rotationRefusal(id, { revoked: false, rotatedTo: rotated.successor })!;
    if (rotated.outcome === 'revoked') throw rotationRefusal(id, { revoked: true })!;
    // Committed: the new secret exists only in this answer and a retry would be refused, so nothing may fail from here.
    await this.#announce(id, { type: revokes ? 'revoked' : 'changed', keyHash, epoch: rotated.epoch });
    return { issued: { key, record: rotated.successor }, previous: rotated.previous };
  }

  /** Best effort: a change whose announcement is lost moved the epoch, which replicas check every second (src/auth/key-events.ts). */
  async #announce(id: string, event: KeyEvent): Promise<void> {
    try {
      await publishKeyEvent(this.#redis, this.#prefix, event);
    } catch (error) {
      this.#options.onAnnouncementFailed?.(id, error);
    }
  }

  async #find(id: string): Promise<{ keyHash: string; record: KeyRecord }> {
    const keyHash = await this.#redis.get(this.#layout.byId(id));
    if (!keyHash) throw new KeyAdminError('not_found', `no key with id ${id}`);
    const record = fromHashFields(await this.#redis.hgetall(this.#layout.record(keyHash)));
    if (!record) throw new KeyAdminError('damaged', `the record of key ${id} is damaged`);
    return { keyHash, record };
  }

  /** A key hashed with another pepper would be listed yet refused everywhere: refused here. The first writer records its own. */
  async #claimPepper(): Promise<void> {
    const mine = this.#hashKey.pepperFingerprint;
    const claim = await claimPepperFingerprint(this.#redis, this.#prefix, mine);
    if (claim.outcome === 'differs') throw new KeyAdminError('pepper_mismatch', `refusing to write: ${describePepperMismatch(claim.stored, mine)}`);
    if (claim.outcome === 'recorded' && claim.existingKeys > 0) this.#options.onPepperRecorded?.(claim.existingKeys);
  }

  /** Writes by id never hash a key: a pepper mismatch is reported, never blocking (revoking a leaked key must not wait). */
  async #notePepper(): Promise<void> {
    const mine = this.#hashKey.pepperFingerprint;
    const stored = await readPepperFingerprint(this.#redis, this.#prefix);
    if (stored !== null && stored !== mine) this.#options.onPepperMismatch?.(describePepperMismatch(stored, mine));
  }

  /** Writes `fields` and removes `removed` from the record; an empty `fields` writes nothing (HSET takes one pair at least). */
  async #update(id: string, fields: Record<string, string>, event: 'revoked' | 'changed', removed: readonly string[] = []): Promise<KeyRecord> {
    const { keyHash } = await this.#find(id);
    await this.#notePepper();
    // The record and the epoch move together (one slot, one transaction): a replica that sees the epoch reads the change.
    const writes = Object.keys(fields).length > 0;
    const transaction = this.#redis.multi();
    if (writes) transaction.hset(this.#layout.record(keyHash), fields);
    if (removed.length > 0) transaction.hdel(this.#layout.record(keyHash), ...removed);
    const replies = await transaction.incr(this.#layout.eventsEpoch).exec();
    // A transaction's commands fail one by one (no rollback): the change holds only if every one did.
    const discarded = new Error('the key change was not applied (transaction discarded)');
    const commands = (writes ? 1 : 0) + (removed.length > 0 ? 1 : 0) + 1;
    for (let index = 0; index < commands; index++) {
      const [failed] = replies?.[index] ?? [discarded];
      if (failed) throw failed;
    }
    const epoch = replies![commands - 1]![1];
    await publishKeyEvent(this.#redis, this.#prefix, { type: event, keyHash, epoch: Number(epoch) });
    return (await this.#find(id)).record;
  }
}

/** A key rotated before, or revoked, is not rotated again: its successor, or a new key, is the one to use. */
function rotationRefusal(id: string, record: Pick<KeyRecord, 'revoked' | 'rotatedTo'>): KeyAdminError | undefined {
  if (record.rotatedTo !== undefined) return new KeyAdminError('conflict', `key ${id} was already rotated to ${record.rotatedTo}; rotate that key instead`);
  if (record.revoked) return new KeyAdminError('conflict', `key ${id} is revoked; create a new one instead`);
  return undefined;
}
