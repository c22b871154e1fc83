// The production key store: key records in Redis, looked up by key hash in one round trip.
import type { RedisClient } from '../redis/connect.ts';
import { fromHashFields, keyLayout, type KeyLayout } from './key-records.ts';
import { KeyStoreUnavailableError, type KeyRecord, type KeyStore } from './key-store.ts';

export class RedisKeyStore implements KeyStore {
  readonly #redis: RedisClient;
  readonly #layout: KeyLayout;

  constructor(redis: RedisClient, keyPrefix: string) {
    this.#redis = redis;
    this.#layout = keyLayout(keyPrefix);
  }

  async findByHash(keyHash: string): Promise<KeyRecord | undefined> {
    let fields: Record<string, string>;
    try {
      fields = await this.#redis.hgetall(this.#layout.record(keyHash));
    } catch (cause) {
      throw new KeyStoreUnavailableError('redis did not answer the key lookup', { cause });
    }
    return fromHashFields(fields);
  }
}
