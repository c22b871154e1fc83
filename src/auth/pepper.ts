// Reads the key-hash pepper: from API_KEY_PEPPER, or the file the config names (a mounted secret); production requires one.
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/load-config.ts';
import type { GatewayConfig } from '../config/schema.ts';

/** The same floor for both sources: a short pepper is one an attacker with a copy of Redis could search for. */
const MIN_PEPPER_LENGTH = 16;

/** The opt-out of "production requires a pepper", for deployments whose keys were issued unpeppered. Unsafe; see docs/configuration.md. */
export const ALLOW_NO_PEPPER = 'API_KEY_ALLOW_NO_PEPPER';

type Env = Readonly<Record<string, string | undefined>>;

export function loadPepper(config: Pick<GatewayConfig, 'environment' | 'auth'>, env: Env = process.env): string | undefined {
  const fromEnv = env.API_KEY_PEPPER || undefined;
  const pepperFile = config.auth.pepperFile;
  // Two sources silently ranked would let a stale one win; the operator says which.
  if (fromEnv !== undefined && pepperFile !== null) {
    throw new ConfigError('API_KEY_PEPPER and API_KEY_PEPPER_FILE (auth.pepperFile) are both set: set only one');
  }
  if (fromEnv !== undefined) {
    if (fromEnv.length < MIN_PEPPER_LENGTH) throw new ConfigError(`API_KEY_PEPPER: the pepper must be at least ${MIN_PEPPER_LENGTH} characters`);
    return fromEnv;
  }
  if (pepperFile !== null) return readPepperFile(pepperFile);
  if (config.environment === 'production' && !allowsNoPepper(env)) {
    throw new ConfigError(
      `GATEWAY_ENVIRONMENT is production and no pepper is set: set API_KEY_PEPPER_FILE (auth.pepperFile; a mounted secret) or API_KEY_PEPPER, at least ${MIN_PEPPER_LENGTH} characters (openssl rand -base64 32)`,
    );
  }
  return undefined;
}

function readPepperFile(pepperFile: string): string {
  let pepper: string;
  try {
    pepper = readFileSync(pepperFile, 'utf8').trim();
  } catch (cause) {
    throw new ConfigError(`API_KEY_PEPPER_FILE (auth.pepperFile): ${pepperFile} could not be read: ${(cause as Error).message}`, { cause });
  }
  if (pepper.length < MIN_PEPPER_LENGTH)
    throw new ConfigError(`API_KEY_PEPPER_FILE (auth.pepperFile): the pepper must be at least ${MIN_PEPPER_LENGTH} characters`);
  return pepper;
}

function allowsNoPepper(env: Env): boolean {
  const value = env[ALLOW_NO_PEPPER];
  if (value === undefined || value === '' || value === 'false') return false;
  if (value === 'true') return true;
  throw new ConfigError(`${ALLOW_NO_PEPPER}: must be true or false, is ${JSON.stringify(value)}`);
}
