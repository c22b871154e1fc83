// Turns an API key into the handle it is stored under: HMAC-SHA-256 with the pepper, or SHA-256 without one.
import { createHash, createHmac, createSecretKey } from 'node:crypto';

export type KeyHasher = (apiKey: string) => string;

/**
 * With a pepper (a server-side secret kept outside Redis), a copy of the Redis data alone is not
 * enough to test guessed keys. Keys are 256-bit random, so a plain SHA-256 is already not invertible.
 */
export function createKeyHasher(pepper: string | undefined): KeyHasher {
  if (pepper) {
    // A key object made once: a string pepper would be converted to bytes again on every request.
    const secret = createSecretKey(pepper, 'utf8');
    return function hmacKey(apiKey) {
      return createHmac('sha256', secret).update(apiKey).digest('hex');
    };
  }
  return function sha256Key(apiKey) {
    return createHash('sha256').update(apiKey).digest('hex');
  };
}
