// The form of an API key: an environment prefix and 256 random bits, so leaked keys can be grepped for.
import { randomBytes } from 'node:crypto';
import type { Environment } from '../config/schema.ts';

const PREFIX_BY_ENVIRONMENT = { production: 'psk_live_', staging: 'psk_test_' } as const;

/** 32 random bytes in base64url are 43 characters. */
const API_KEY_SHAPE = /^psk_(?:live|test)_[A-Za-z0-9_-]{43}$/;

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
