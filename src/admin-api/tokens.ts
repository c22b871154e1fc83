// The admin API's tokens: read from ADMIN_API_TOKEN_FILE, checked in constant time, named in logs by a fingerprint only.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/load-config.ts';

/** A token an attacker cannot search for: 32 characters of `openssl rand -base64 32` are some 190 bits. */
export const MIN_ADMIN_TOKEN_LENGTH = 32;

/** What `Authorization: Bearer` can carry (RFC 6750 token68, at most 256 characters as src/auth/bearer.ts reads it): any other token could never match. */
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]{1,256}=*$/;

const SETTING = 'ADMIN_API_TOKEN_FILE (adminApi.tokenFile)';

/** The admin tokens in force: several during a rotation. */
export interface AdminTokens {
  /** The fingerprint of the token `offered` matches, or undefined; every token is compared, in constant time. */
  match(offered: string): string | undefined;
  readonly count: number;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** What the audit log names a token by: a short prefix of its SHA-256, which tells tokens apart and reveals nothing usable. */
export function tokenFingerprint(token: string): string {
  return sha256(token).toString('hex').slice(0, 12);
}

/** The tokens of a file's text: one a line, surrounding blanks trimmed, blank lines ignored; a short one is refused. */
export function parseAdminTokens(text: string): AdminTokens {
  const lines = text.split(/\r?\n/).map((line) => line.trim());
  const tokens = lines.filter((line) => line !== '');
  for (const [index, line] of lines.entries()) {
    if (line === '') continue;
    if (line.length < MIN_ADMIN_TOKEN_LENGTH)
      throw new ConfigError(`${SETTING}: the token on line ${index + 1} is shorter than ${MIN_ADMIN_TOKEN_LENGTH} characters`);
    if (!BEARER_TOKEN.test(line) || line.length > 256)
      throw new ConfigError(
        `${SETTING}: the token on line ${index + 1} cannot be sent as a Bearer token: use letters, digits and - . _ ~ + / (= only at the end), at most 256 characters`,
      );
  }
  if (tokens.length === 0) throw new ConfigError(`${SETTING}: the file holds no token (one a line, at least ${MIN_ADMIN_TOKEN_LENGTH} characters)`);
  // Digests of equal length: comparing them takes the same time whatever the offered token's length or content.
  const known = tokens.map((token) => ({ digest: sha256(token), fingerprint: tokenFingerprint(token) }));
  return {
    count: known.length,
    match(offered) {
      const digest = sha256(offered);
      let found: string | undefined;
      // No early exit: how long a comparison takes does not tell which line matched.
      for (const token of known) if (timingSafeEqual(digest, token.digest)) found ??= token.fingerprint;
      return found;
    },
  };
}

/** Reads the token file; an unreadable file or a short token is a ConfigError naming ADMIN_API_TOKEN_FILE. */
export function loadAdminTokens(file: string): AdminTokens {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    throw new ConfigError(`${SETTING}: ${file} could not be read: ${(cause as Error).message}`, { cause });
  }
  return parseAdminTokens(text);
}

/** The tokens in force, replaced as a reload reads the file again (SIGHUP): tokens rotate without a restart. */
export interface AdminTokenSource {
  /** Undefined while `adminApi.tokenFile` is null: the admin API is off. */
  current(): AdminTokens | undefined;
  /** Reads and checks `file` (null: off), throwing a ConfigError as start-up would; the function returned puts it in force. */
  prepare(file: string | null): () => void;
}

/** Reads `file` now (start-up): a bad one stops it, naming ADMIN_API_TOKEN_FILE. */
export function createAdminTokenSource(file: string | null): AdminTokenSource {
  let current = file === null ? undefined : loadAdminTokens(file);
  return {
    current: () => current,
    prepare(next) {
      const tokens = next === null ? undefined : loadAdminTokens(next);
      return () => {
        current = tokens;
      };
    },
  };
}
