// The production key store: key records in Redis, looked up by key hash in one round trip.
import { timed, type RedisCommandObserver } from '../redis/command-timing.ts';
import type { RedisClient } from '../redis/connect.ts';
import { fromHashFields, keyLayout, type KeyLayout } from './key-records.ts';
import { KeyStoreUnavailableError, type KeyRecord, type KeyStore } from './key-store.ts';

export class RedisKeyStore implements KeyStore {
  readonly #redis: RedisClient;
  readonly #layout: KeyLayout;
  readonly #observe: RedisCommandObserver | undefined;

  /** `observe` is told how each lookup's command went (the Redis command metrics). */
  constructor(redis: RedisClient, keyPrefix: string, observe?: RedisCommandObserver) {
    this.#redis = redis;
    this.#layout = keyLayout(keyPrefix);
    this.#observe = observe;
  }

  async findByHash(keyHash: string): Promise<KeyRecord | undefined> {
    let fields: Record<string, string>;
    try {
      const key = this.#layout.record(keyHash);
      fields = await timed(this.#observe, () => this.#redis.hgetall(key));
    } catch (cause) {
      throw new KeyStoreUnavailableError('redis did not answer the key lookup', { cause });
    }
    return fromHashFields(fields);
  }
}
