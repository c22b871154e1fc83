// Names the pepper the keys in a Redis were made with, so a gateway or CLI with another one finds out instead of failing every key.
import { createHmac } from 'node:crypto';
import type { RedisClient } from '../redis/connect.ts';
import { keyLayout } from './key-records.ts';

/** The fingerprint of "no pepper" (keys stored as plain SHA-256), so a mix of peppered and unpeppered is caught too. */
export const NO_PEPPER = 'none';

/** A fixed label: the fingerprint is its HMAC under the pepper. Changing it would make every stored fingerprint differ. */
const LABEL = 'petstore-gateway pepper fingerprint v1';

/**
 * An HMAC of a fixed label under the pepper. A Redis copy allows testing guessed peppers offline; 16 characters or more
 * make that hopeless, and a found pepper still leaves 256-bit random keys to guess.
 */
export function pepperFingerprint(pepper: string | undefined): string {
  return pepper ? `hmac-sha256:${createHmac('sha256', pepper).update(LABEL).digest('hex')}` : NO_PEPPER;
}

/** What Redis said about a fingerprint: the keys' pepper is this one, was recorded as this one now, or is another. */
export type FingerprintClaim =
  | { outcome: 'matches' }
  /** None was stored; this one is now. `existingKeys` > 0: keys written before fingerprints existed, assumed to share it. */
  | { outcome: 'recorded'; existingKeys: number }
  | { outcome: 'differs'; stored: string }
  /** None stored and no key to adopt: nothing to disagree with yet (asked with onlyOverExistingKeys). */
  | { outcome: 'absent' };

// Atomic: two writers with different peppers cannot both record theirs. ARGV[2] '1': record only over existing keys.
const CLAIM_SCRIPT = `
local stored = redis.call('GET', KEYS[1])
if stored then return {'stored', stored} end
local keys = redis.call('SCARD', KEYS[2])
if ARGV[2] == '1' and keys == 0 then return {'absent', '0'} end
redis.call('SET', KEYS[1], ARGV[1])
return {'recorded', tostring(keys)}
`;

/**
 * Compares `fingerprint` with the stored one, recording it when none is (first writer wins). `onlyOverExistingKeys`:
 * record only over keys older than fingerprints, else `absent`: a gateway must not claim an empty Redis.
 */
export async function claimPepperFingerprint(
  redis: RedisClient,
  keyPrefix: string,
  fingerprint: string,
  onlyOverExistingKeys = false,
): Promise<FingerprintClaim> {
  const layout = keyLayout(keyPrefix);
  const [kind, value] = (await redis.eval(CLAIM_SCRIPT, 2, layout.pepperFingerprint, layout.ids, fingerprint, onlyOverExistingKeys ? '1' : '0')) as [
    string,
    string,
  ];
  if (kind === 'absent') return { outcome: 'absent' };
  if (kind === 'recorded') return { outcome: 'recorded', existingKeys: Number(value) };
  return value === fingerprint ? { outcome: 'matches' } : { outcome: 'differs', stored: value };
}

/** Compares without recording: for writes that do not depend on the pepper. */
export async function readPepperFingerprint(redis: RedisClient, keyPrefix: string): Promise<string | null> {
  return redis.get(keyLayout(keyPrefix).pepperFingerprint);
}

/** Why the two differ, naming the settings an operator changes (API_KEY_PEPPER, API_KEY_PEPPER_FILE). */
export function describePepperMismatch(stored: string, mine: string): string {
  if (stored === NO_PEPPER) {
    return 'the API keys in this Redis were made without a pepper, but one is set (API_KEY_PEPPER or API_KEY_PEPPER_FILE): unset it, or re-issue the keys with it';
  }
  if (mine === NO_PEPPER) {
    return "the API keys in this Redis were made with a pepper, but none is set: set API_KEY_PEPPER_FILE (or API_KEY_PEPPER) to the gateways' pepper";
  }
  return "the pepper (API_KEY_PEPPER or API_KEY_PEPPER_FILE) differs from the one the API keys in this Redis were made with: use the gateways' pepper";
}
