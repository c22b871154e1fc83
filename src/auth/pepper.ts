// Reads the key-hash pepper: from API_KEY_PEPPER, or the file the config names (a mounted secret).
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/load-config.ts';

export function loadPepper(pepperFile: string | null, env: Readonly<Record<string, string | undefined>> = process.env): string | undefined {
  if (env.API_KEY_PEPPER) return env.API_KEY_PEPPER;
  if (pepperFile === null) return undefined;
  let pepper: string;
  try {
    pepper = readFileSync(pepperFile, 'utf8').trim();
  } catch (cause) {
    throw new ConfigError(`auth.pepperFile: ${pepperFile} could not be read: ${(cause as Error).message}`, { cause });
  }
  if (pepper.length < 16) throw new ConfigError('auth.pepperFile: the pepper must be at least 16 characters');
  return pepper;
}
