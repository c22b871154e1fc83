// An in-process key store for the demo and unit tests: same interface as the Redis store, nothing persisted.
import type { KeyRecord, KeyStore } from './key-store.ts';

export class MemoryKeyStore implements KeyStore {
  readonly #records = new Map<string, KeyRecord>();

  add(keyHash: string, record: KeyRecord): void {
    this.#records.set(keyHash, { ...record });
  }

  revoke(keyId: string): void {
    for (const [hash, record] of this.#records) {
      if (record.id === keyId) this.#records.set(hash, { ...record, revoked: true });
    }
  }

  async findByHash(keyHash: string): Promise<KeyRecord | undefined> {
    return this.#records.get(keyHash);
  }
}
