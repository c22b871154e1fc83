// The API key a request presents: its Authorization header read as a bearer token and held to the form of an issued key.
import { API_KEY_LENGTH, API_KEY_PREFIXES, hasApiKeyShape, isApiKeyCharacter } from './api-key.ts';
import { readBearer } from './bearer.ts';

/** A key of an issued key's form; or why there is none: no header, not a bearer token, a token no key could be. */
export type PresentedKey = { kind: 'key'; key: string } | { kind: 'missing' | 'malformed' | 'unknown' };

const SCHEME = 'Bearer ';
const UNKNOWN: PresentedKey = Object.freeze({ kind: 'unknown' });
/** Where a key's random part starts in `Bearer <key>`: after the scheme and the prefix (every prefix is one length). */
const RANDOM_PART = SCHEME.length + API_KEY_PREFIXES[0]!.length;
/** Which code units below 128 are base64url's: one load per character, not five comparisons. */
const KEY_CHARACTERS = Uint8Array.from({ length: 128 }, (_, code) => (isApiKeyCharacter(code) ? 1 : 0));

/**
 * What `Authorization` presents: readBearer's answer, then the token held to hasApiKeyShape. Every request on the API
 * passes here, and nearly all send `Bearer <key>` as written: that form is read a character at a time in the header
 * itself (a regular expression's test has a fixed cost several times a short string's reading); any other form goes
 * through the two expressions.
 */
export function readPresentedKey(authorization: string | undefined): PresentedKey {
  if (authorization !== undefined && isBearerKey(authorization)) return { kind: 'key', key: authorization.slice(SCHEME.length) };
  const bearer = readBearer(authorization);
  if (bearer.kind !== 'token') return bearer;
  return hasApiKeyShape(bearer.token) ? { kind: 'key', key: bearer.token } : UNKNOWN;
}

/** Whether the header is `Bearer ` and a key of an issued key's form, exactly (then readBearer and hasApiKeyShape agree). */
function isBearerKey(authorization: string): boolean {
  if (authorization.length !== SCHEME.length + API_KEY_LENGTH || !authorization.startsWith(SCHEME)) return false;
  let prefixed = false;
  for (let index = 0; index < API_KEY_PREFIXES.length; index++) prefixed ||= authorization.startsWith(API_KEY_PREFIXES[index]!, SCHEME.length);
  if (!prefixed) return false;
  for (let at = RANDOM_PART; at < authorization.length; at++) {
    const code = authorization.charCodeAt(at);
    if (code >= 128 || KEY_CHARACTERS[code] === 0) return false;
  }
  return true;
}
