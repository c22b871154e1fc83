// The form of an API key: an environment prefix and 256 random bits, so leaked keys can be grepped for.
import { randomBytes } from 'node:crypto';
import type { Environment } from '../config/schema.ts';

const PREFIX_BY_ENVIRONMENT = { production: 'psk_live_', staging: 'psk_test_' } as const;

/** 32 random bytes in base64url are 43 characters. */
const API_KEY_SHAPE = /^psk_(?:live|test)_[A-Za-z0-9_-]{43}$/;

/** The prefixes a key may start with, all of one length. */
export const API_KEY_PREFIXES: readonly string[] = Object.values(PREFIX_BY_ENVIRONMENT);
/** The length of every issued key: its prefix and 43 characters of base64url. */
export const API_KEY_LENGTH = PREFIX_BY_ENVIRONMENT.production.length + 43;

/** Whether a UTF-16 code unit is one of base64url's 64 characters (`A-Z`, `a-z`, `0-9`, `-`, `_`). */
export function isApiKeyCharacter(code: number): boolean {
  return (code >= 0x61 && code <= 0x7a) || (code >= 0x41 && code <= 0x5a) || (code >= 0x30 && code <= 0x39) || code === 0x2d || code === 0x5f;
}

/** A key valid in production carries the live prefix, so a leaked production key is recognisable as one. */
export function generateApiKey(environments: readonly Environment[]): string {
  const prefix = environments.includes('production') ? PREFIX_BY_ENVIRONMENT.production : PREFIX_BY_ENVIRONMENT.staging;
  return prefix + randomBytes(32).toString('base64url');
}

/** Whether a token could be a key the gateway issued; anything else is refused without a store lookup. */
export function hasApiKeyShape(token: string): boolean {
  return API_KEY_SHAPE.test(token);
}

export function generateKeyId(): string {
  return `key_${randomBytes(9).toString('base64url')}`;
}
