// Turns an API key into the handle it is stored under: HMAC-SHA-256 with the pepper, or SHA-256 without one.
import { createHmac, createSecretKey, hash } from 'node:crypto';
import { pepperFingerprint } from './pepper-fingerprint.ts';

export type KeyHasher = (apiKey: string) => string;

/** A hasher that names its pepper (by fingerprint), so whoever writes or reads keys in Redis can check it is the keys' pepper. */
export type PepperedKeyHasher = KeyHasher & { readonly pepperFingerprint: string };

/** Keys whose HMAC is remembered; past this, the oldest is forgotten (and computed again when it comes back). */
export const REMEMBERED_HMACS = 10_000;

/**
 * With a pepper (a server-side secret kept outside Redis), a copy of the Redis data alone is not
 * enough to test guessed keys. Keys are 256-bit random, so a plain SHA-256 is already not invertible.
 *
 * An HMAC builds a keyed-hash context on every call; measured on the request path, that cost several
 * times a one-shot SHA-256. So each key's HMAC is computed once and then found by the key's SHA-256:
 * the process keeps no key, only digests of it, as the cache behind it does.
 */
export function createKeyHasher(pepper: string | undefined): PepperedKeyHasher {
  const named = (hasher: KeyHasher) => Object.assign(hasher, { pepperFingerprint: pepperFingerprint(pepper) });
  if (!pepper) {
    return named(function sha256Key(apiKey) {
      return hash('sha256', apiKey, 'hex');
    });
  }
  // A key object made once: a string pepper would be converted to bytes again on every HMAC.
  const secret = createSecretKey(pepper, 'utf8');
  const remembered = new Map<string, string>();
  return named(function hmacKey(apiKey) {
    const digest = hash('sha256', apiKey, 'base64url');
    let keyHash = remembered.get(digest);
    if (keyHash === undefined) {
      keyHash = createHmac('sha256', secret).update(apiKey).digest('hex');
      // Oldest first out: a flood of unknown keys only costs the known ones a fresh HMAC each.
      if (remembered.size >= REMEMBERED_HMACS) {
        const oldest = remembered.keys().next();
        if (!oldest.done) remembered.delete(oldest.value);
      }
      remembered.set(digest, keyHash);
    }
    return keyHash;
  });
}
