// Turns an API key into the handle it is stored under: HMAC-SHA-256 with the pepper, or SHA-256 without one.
import { createHmac, createSecretKey, hash } from 'node:crypto';
import { pepperFingerprint } from './pepper-fingerprint.ts';

export type KeyHasher = (apiKey: string) => string;

/** A hasher that names its pepper (by fingerprint), so whoever writes or reads keys in Redis can check it is the keys' pepper. */
export type PepperedKeyHasher = KeyHasher & { readonly pepperFingerprint: string };

/** Keys whose HMAC is remembered; past this, the oldest is forgotten (and computed again when it comes back). */
export const REMEMBERED_HMACS = 10_000;

/**
 * With a pepper (a secret kept outside Redis) a copy of Redis alone cannot test guessed keys; keys are 256-bit random,
 * so plain SHA-256 is not invertible either. An HMAC builds a context per call (several times a SHA-256's cost, as
 * measured), so each key's HMAC is computed once and found by its SHA-256: only digests are kept.
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
