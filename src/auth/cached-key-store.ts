// A read-through cache in front of a key store: found keys and known absences bounded apart, one lookup per key at a time.
import { LRUCache } from 'lru-cache';
import type { Clock } from '../time/clock.ts';
import { monotonicMs } from '../time/monotonic.ts';
import type { KeyLookupFacts, KeyRecord, KeyStore } from './key-store.ts';

export interface KeyCacheOptions {
  /** Most found key records held at once. */
  maxEntries: number;
  /** Most known absences held (default 1000), apart so unknown keys never evict a valid one (which rides out an outage). */
  maxNegativeEntries?: number;
  /** How long a found record is trusted without asking the store again. */
  ttlMs: number;
  /** How long "no such key" is trusted: a flood of bad keys then costs one lookup each per this period. */
  negativeTtlMs: number;
  clock: Clock;
  /** Told whether each lookup was answered from the cache, for metrics. */
  onLookup?: (outcome: 'hit' | 'miss') => void;
}

function checkCount(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`key cache: ${name} must be a positive integer, got ${value}`);
  return value;
}

export class CachedKeyStore implements KeyStore {
  readonly #store: KeyStore;
  readonly #found: LRUCache<string, KeyRecord>;
  readonly #absent: LRUCache<string, true>;
  /** Lookups in flight, so concurrent requests with one key share one store call. */
  readonly #pending = new Map<string, Promise<KeyRecord | undefined>>();
  readonly #onLookup: KeyCacheOptions['onLookup'];

  constructor(store: KeyStore, options: KeyCacheOptions) {
    const { maxEntries, maxNegativeEntries = 1000, ttlMs, negativeTtlMs, clock, onLookup } = options;
    this.#store = store;
    this.#onLookup = onLookup;
    // ttlResolution 0: ask the clock on every read, so a test clock moved a moment ago is seen.
    const timing = { perf: { now: () => clock.now() }, ttlResolution: 0 };
    this.#found = new LRUCache({ max: checkCount('maxEntries', maxEntries), ttl: checkCount('ttlMs', ttlMs), ...timing });
    this.#absent = new LRUCache({ max: checkCount('maxNegativeEntries', maxNegativeEntries), ttl: checkCount('negativeTtlMs', negativeTtlMs), ...timing });
  }

  async findByHash(keyHash: string, facts?: KeyLookupFacts): Promise<KeyRecord | undefined> {
    const record = this.#found.get(keyHash);
    if (record !== undefined || this.#absent.get(keyHash)) {
      this.#onLookup?.('hit');
      if (facts !== undefined) facts.keyCache = 'hit';
      return record;
    }
    this.#onLookup?.('miss');
    if (facts !== undefined) {
      facts.keyCache = 'miss';
      facts.lookupStartMs = monotonicMs();
    }
    return this.#lookup(keyHash);
  }

  #lookup(keyHash: string): Promise<KeyRecord | undefined> {
    const pending = this.#pending.get(keyHash);
    if (pending) return pending;
    // Only a lookup still registered may fill the cache: evict and clear unregister it, so no pre-revocation answer is kept.
    const lookup: Promise<KeyRecord | undefined> = this.#store.findByHash(keyHash).then(
      (record) => {
        if (this.#pending.get(keyHash) !== lookup) return record;
        this.#pending.delete(keyHash);
        if (record) this.#found.set(keyHash, record);
        else this.#absent.set(keyHash, true);
        return record;
      },
      (error: unknown) => {
        // A failed lookup is not cached and serves no expired entry: the next request asks again.
        if (this.#pending.get(keyHash) === lookup) this.#pending.delete(keyHash);
        throw error;
      },
    );
    this.#pending.set(keyHash, lookup);
    return lookup;
  }

  /** Forgets one key, so its next use reads the store (revocation, rotation). */
  evict(keyHash: string): void {
    this.#found.delete(keyHash);
    this.#absent.delete(keyHash);
    this.#pending.delete(keyHash);
  }

  /** Forgets everything (after a lost subscription, when events may have been missed). */
  clear(): void {
    this.#found.clear();
    this.#absent.clear();
    this.#pending.clear();
  }

  /** Entries held: found records and known absences, the expired ones not yet purged included. */
  get size(): number {
    return this.#found.size + this.#absent.size;
  }
}
