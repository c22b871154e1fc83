// The key cache: found keys survive a flood of unknown ones and an outage, absences stay bounded, one lookup per key.
import { describe, expect, it } from 'vitest';
import { CachedKeyStore, type KeyCacheOptions } from '../../../src/auth/cached-key-store.ts';
import { type KeyLookupFacts, KeyStoreUnavailableError, type KeyRecord, type KeyStore } from '../../../src/auth/key-store.ts';
import { fixedClock } from '../../../src/time/clock.ts';

const T0 = Date.parse('2026-11-21T12:00:00Z');
const VALID: KeyRecord = { id: 'key_valid', consumer: 'acme', environments: ['production'], createdAt: '2026-01-01T00:00:00Z', revoked: false };

/** A key store that holds one record, counts its lookups, can be taken down, and can hold answers back. */
class FakeKeyStore implements KeyStore {
  readonly records = new Map<string, KeyRecord>([['hash-valid', VALID]]);
  lookups: string[] = [];
  down = false;
  #held: Array<() => void> | undefined;

  async findByHash(keyHash: string): Promise<KeyRecord | undefined> {
    this.lookups.push(keyHash);
    if (this.#held) await new Promise<void>((resolve) => this.#held!.push(resolve));
    if (this.down) throw new KeyStoreUnavailableError('store unreachable');
    return this.records.get(keyHash);
  }

  /** Answers nothing until release() is called. */
  hold(): void {
    this.#held = [];
  }

  release(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const resolve of held) resolve();
  }
}

function setup(options: Partial<KeyCacheOptions> = {}) {
  const store = new FakeKeyStore();
  const clock = fixedClock(T0);
  const outcomes: Array<'hit' | 'miss'> = [];
  const cache = new CachedKeyStore(store, {
    maxEntries: 10,
    maxNegativeEntries: 4,
    ttlMs: 30_000,
    negativeTtlMs: 5000,
    clock,
    onLookup: (outcome) => outcomes.push(outcome),
    ...options,
  });
  return { store, clock, cache, outcomes };
}

async function flood(cache: CachedKeyStore, count: number): Promise<void> {
  for (let i = 0; i < count; i++) expect(await cache.findByHash(`hash-bogus-${i}`)).toBeUndefined();
}

describe('CachedKeyStore under a flood of unknown keys', () => {
  it('answers a cached valid key through a store outage after 10 x maxEntries unknown keys, within its TTL', async () => {
    const { store, clock, cache } = setup();
    expect(await cache.findByHash('hash-valid')).toEqual(VALID);
    await flood(cache, 100);
    store.down = true;
    clock.set(T0 + 30_000);
    const lookupsBefore = store.lookups.length;
    expect(await cache.findByHash('hash-valid')).toEqual(VALID);
    expect(store.lookups.length).toBe(lookupsBefore);
  });

  it("refuses to guess once the valid key's entry is older than ttlMs and the store is still down", async () => {
    const { store, clock, cache } = setup();
    await cache.findByHash('hash-valid');
    await flood(cache, 100);
    store.down = true;
    clock.set(T0 + 30_001);
    await expect(cache.findByHash('hash-valid')).rejects.toBeInstanceOf(KeyStoreUnavailableError);
  });

  it('holds at most maxNegativeEntries known absences, apart from the found records', async () => {
    const { cache } = setup();
    await cache.findByHash('hash-valid');
    await flood(cache, 100);
    expect(cache.size).toBe(1 + 4);
  });

  it('holds at most maxEntries found records', async () => {
    const { store, cache } = setup();
    for (let i = 0; i < 25; i++) store.records.set(`hash-${i}`, { ...VALID, id: `key_${i}` });
    for (let i = 0; i < 25; i++) await cache.findByHash(`hash-${i}`);
    expect(cache.size).toBe(10);
  });
});

describe('CachedKeyStore lookups', () => {
  it('asks the store once per key within the TTL and reports hit or miss', async () => {
    const { store, clock, cache, outcomes } = setup();
    await cache.findByHash('hash-valid');
    clock.set(T0 + 30_000);
    await cache.findByHash('hash-valid');
    clock.set(T0 + 30_001);
    await cache.findByHash('hash-valid');
    expect(store.lookups).toEqual(['hash-valid', 'hash-valid']);
    expect(outcomes).toEqual(['miss', 'hit', 'miss']);
  });

  it("writes the request's facts: a hit, or a miss and when the store was asked", async () => {
    const { cache } = setup();
    const miss: KeyLookupFacts = { keyCache: undefined, lookupStartMs: 0 };
    const before = performance.now();
    await cache.findByHash('hash-valid', miss);
    expect(miss.keyCache).toBe('miss');
    expect(miss.lookupStartMs).toBeGreaterThanOrEqual(before);
    const hit: KeyLookupFacts = { keyCache: undefined, lookupStartMs: 0 };
    await cache.findByHash('hash-valid', hit);
    expect(hit).toEqual({ keyCache: 'hit', lookupStartMs: 0 });
  });

  it('trusts "no such key" for negativeTtlMs only', async () => {
    const { store, clock, cache, outcomes } = setup();
    expect(await cache.findByHash('hash-new')).toBeUndefined();
    store.records.set('hash-new', VALID);
    clock.set(T0 + 5000);
    expect(await cache.findByHash('hash-new')).toBeUndefined();
    clock.set(T0 + 5001);
    expect(await cache.findByHash('hash-new')).toEqual(VALID);
    expect(outcomes).toEqual(['miss', 'hit', 'miss']);
  });

  it('shares one store call among concurrent lookups of one key', async () => {
    const { store, cache, outcomes } = setup();
    store.hold();
    const answers = Promise.all([cache.findByHash('hash-valid'), cache.findByHash('hash-valid'), cache.findByHash('hash-valid')]);
    store.release();
    expect(await answers).toEqual([VALID, VALID, VALID]);
    expect(store.lookups).toEqual(['hash-valid']);
    expect(outcomes).toEqual(['miss', 'miss', 'miss']);
  });

  it('does not cache a failed lookup: the next request asks again', async () => {
    const { store, cache } = setup();
    store.down = true;
    await expect(cache.findByHash('hash-valid')).rejects.toBeInstanceOf(KeyStoreUnavailableError);
    store.down = false;
    expect(await cache.findByHash('hash-valid')).toEqual(VALID);
    expect(store.lookups).toEqual(['hash-valid', 'hash-valid']);
  });

  it('evict makes the next use read the store', async () => {
    const { store, cache } = setup();
    await cache.findByHash('hash-valid');
    store.records.set('hash-valid', { ...VALID, revoked: true });
    cache.evict('hash-valid');
    expect(await cache.findByHash('hash-valid')).toEqual({ ...VALID, revoked: true });
  });

  it('does not keep an answer read before an evict that arrived while the lookup was in flight', async () => {
    const { store, cache } = setup();
    store.hold();
    const inFlight = cache.findByHash('hash-valid');
    cache.evict('hash-valid');
    store.release();
    expect(await inFlight).toEqual(VALID);
    expect(cache.size).toBe(0);
  });

  it('clear forgets records and absences', async () => {
    const { store, cache } = setup();
    await cache.findByHash('hash-valid');
    await cache.findByHash('hash-bogus');
    cache.clear();
    expect(cache.size).toBe(0);
    await cache.findByHash('hash-valid');
    expect(store.lookups).toEqual(['hash-valid', 'hash-bogus', 'hash-valid']);
  });

  it.each([
    ['maxEntries', { maxEntries: 0 }],
    ['maxNegativeEntries', { maxNegativeEntries: 1.5 }],
    ['negativeTtlMs', { negativeTtlMs: -1 }],
  ])('refuses a bad %s at construction', (name, options) => {
    expect(() => setup(options)).toThrow(`key cache: ${name} must be a positive integer`);
  });
});
