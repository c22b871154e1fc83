// A read-through cache in front of a key store: bounded, short-lived, negative results too, one lookup per key at a time.
import { LRUCache } from 'lru-cache';
import type { Clock } from '../http/clock.ts';
import type { KeyRecord, KeyStore } from './key-store.ts';

export interface KeyCacheOptions {
  /** Most key hashes held at once. */
  maxEntries: number;
  /** How long a found record is trusted without asking the store again. */
  ttlMs: number;
  /** How long "no such key" is trusted: a flood of bad keys then costs one lookup each per this period. */
  negativeTtlMs: number;
  clock: Clock;
  /** Told whether each lookup was answered from the cache, for metrics. */
  onLookup?: (outcome: 'hit' | 'miss') => void;
}

/** `null` marks a known absence, so it can be cached; lru-cache does not cache undefined. */
type Entry = { record: KeyRecord | null };

export class CachedKeyStore implements KeyStore {
  readonly #cache: LRUCache<string, Entry>;
  readonly #onLookup: KeyCacheOptions['onLookup'];

  constructor(store: KeyStore, options: KeyCacheOptions) {
    this.#onLookup = options.onLookup;
    this.#cache = new LRUCache<string, Entry>({
      max: options.maxEntries,
      ttl: options.ttlMs,
      perf: { now: () => options.clock.now() },
      // Concurrent lookups of one key share one store call (lru-cache's fetch is single-flight).
      fetchMethod: async (keyHash, _stale, { options: fetchOptions }) => {
        const record = await store.findByHash(keyHash);
        if (!record) fetchOptions.ttl = options.negativeTtlMs;
        return { record: record ?? null };
      },
      // A failed lookup is not cached and does not serve an expired entry: the next request asks again.
      noDeleteOnFetchRejection: false,
      allowStaleOnFetchRejection: false,
    });
  }

  async findByHash(keyHash: string): Promise<KeyRecord | undefined> {
    // One cache operation per request; the status says whether it was answered from the cache.
    const status: LRUCache.Status<string, Entry> = {};
    const entry = await this.#cache.fetch(keyHash, { status });
    this.#onLookup?.(status.fetch === 'hit' ? 'hit' : 'miss');
    return entry?.record ?? undefined;
  }

  /** Forgets one key, so its next use reads the store (revocation, rotation). */
  evict(keyHash: string): void {
    this.#cache.delete(keyHash);
  }

  /** Forgets everything (after a lost subscription, when events may have been missed). */
  clear(): void {
    this.#cache.clear();
  }

  get size(): number {
    return this.#cache.size;
  }
}
