// Reads config/gateway.yaml, lays the environment variables over it, validates once, freezes.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigFileError, readConfigFile } from './config-file.ts';
import { inGatewayWords, unreadableFiles } from './problem-words.ts';
import { configSchema, ENVIRONMENTS, type GatewayConfig, type VersionSource } from './schema.ts';
import { unknownVariableFaults } from './unknown-variables.ts';

export const DEFAULT_CONFIG_FILE = resolve(dirname(fileURLToPath(import.meta.url)), '../../config/gateway.yaml');

/** In a key of ENV_KEYS: the environment the gateway runs in (`environment`), for settings kept per environment. */
export const RUNNING_ENVIRONMENT = '<environment>';

/** Environment variables and the config key each one sets. */
export const ENV_KEYS = {
  PORT: ['listen', 'port'],
  ADMIN_PORT: ['listen', 'adminPort'],
  ADMIN_HOST: ['listen', 'adminHost'],
  GATEWAY_ENVIRONMENT: ['environment'],
  UPSTREAM_URL: ['upstreamUrl'],
  UPSTREAM_TIMEOUT_MS: ['upstream', 'timeoutMs'],
  UPSTREAM_REQUEST_ID_ECHO: ['upstream', 'requestIdEcho'],
  UPSTREAM_HTTP2: ['upstream', 'http2'],
  LOG_LEVEL: ['logging', 'level'],
  REDIS_URL: ['redis', 'url'],
  REDIS_SENTINELS: ['redis', 'sentinels'],
  REDIS_SENTINEL_NAME: ['redis', 'sentinelName'],
  REDIS_CLUSTER_NODES: ['redis', 'clusterNodes'],
  REDIS_PASSWORD: ['redis', 'password'],
  API_KEY_PEPPER_FILE: ['auth', 'pepperFile'],
  ADMIN_API_TOKEN_FILE: ['adminApi', 'tokenFile'],
  RATE_LIMIT_WINDOW_MS: ['rateLimit', 'windowMs'],
  RATE_LIMIT_ON_STORE_ERROR: ['rateLimit', 'onStoreError'],
  RATE_LIMIT_MODE: ['rateLimit', 'mode'],
  RATE_LIMIT_SYNC_MS: ['rateLimit', 'syncMs'],
  RATE_LIMIT_LEGACY_HEADERS: ['rateLimit', 'legacyHeaders'],
  USAGE_RETENTION_DAYS: ['usage', 'retentionDays'],
  USAGE_FLUSH_MS: ['usage', 'flushIntervalMs'],
  SHUTDOWN_GRACE_PERIOD_MS: ['shutdown', 'gracePeriodMs'],
  SHUTDOWN_DRAIN_DELAY_MS: ['shutdown', 'drainDelayMs'],
  GATEWAY_CPU_REQUEST_MILLICORES: ['resources', 'cpuRequestMillicores'],
  GATEWAY_MEMORY_LIMIT_BYTES: ['resources', 'memoryLimitBytes'],
  DEPRECATION_REPORT_FLUSH_MS: ['deprecationReport', 'flushIntervalMs'],
  UPSTREAM_IDENTITY_KEY_FILE: ['upstreamIdentity', 'keyFile'],
  UPSTREAM_IDENTITY_PREVIOUS_KEY_FILE: ['upstreamIdentity', 'previousKeyFile'],
  UPSTREAM_IDENTITY_PREVIOUS_KEY_UNTIL: ['upstreamIdentity', 'previousKeyUntil'],
  CORS_ALLOWED_ORIGINS: ['cors', 'allowedOrigins', RUNNING_ENVIRONMENT],
  CONTRACT_RESPONSES: ['contractResponses', RUNNING_ENVIRONMENT, 'mode'],
  CONTRACT_RESPONSES_SAMPLE: ['contractResponses', RUNNING_ENVIRONMENT, 'sample'],
  CONTRACT_RESPONSES_DEFAULT_COVERS: ['contractResponses', 'defaultCovers'],
  TLS_CERT_FILE: ['listen', 'tls', 'certFile'],
  TLS_KEY_FILE: ['listen', 'tls', 'keyFile'],
  ADMIN_TLS_CERT_FILE: ['listen', 'adminTls', 'certFile'],
  ADMIN_TLS_KEY_FILE: ['listen', 'adminTls', 'keyFile'],
  UPSTREAM_TLS_CA_FILE: ['upstreamTls', RUNNING_ENVIRONMENT, 'caFile'],
  UPSTREAM_TLS_CA_MODE: ['upstreamTls', RUNNING_ENVIRONMENT, 'caMode'],
  UPSTREAM_TLS_CERT_FILE: ['upstreamTls', RUNNING_ENVIRONMENT, 'certFile'],
  UPSTREAM_TLS_KEY_FILE: ['upstreamTls', RUNNING_ENVIRONMENT, 'keyFile'],
  UPSTREAM_TLS_SERVERNAME: ['upstreamTls', RUNNING_ENVIRONMENT, 'servername'],
  UPSTREAM_TLS_MIN_VERSION: ['upstreamTls', RUNNING_ENVIRONMENT, 'minVersion'],
  CERTIFICATE_WATCH_MS: ['certificates', 'watchIntervalMs'],
  SHADOW_SAMPLE: ['shadow', 'sample', 'default'],
  SHADOW_UPSTREAM_URL: ['shadow', 'upstreamUrl'],
} as const satisfies Record<string, readonly string[]>;

/**
 * The variables read outside ENV_KEYS (the file's name, the pepper, its opt-out, the CLIs' admin token): with
 * ENV_KEYS's names, every variable the gateway knows; any other with one of their prefixes is a fault.
 */
export const OTHER_VARIABLES = ['GATEWAY_CONFIG', 'API_KEY_PEPPER', 'API_KEY_ALLOW_NO_PEPPER', 'ADMIN_API_TOKEN'] as const;
export const KNOWN_VARIABLES: readonly string[] = [...Object.keys(ENV_KEYS), ...OTHER_VARIABLES];

/** Variables that hold lists, as comma-separated values. */
const LIST_VARIABLES: ReadonlySet<string> = new Set(['REDIS_SENTINELS', 'REDIS_CLUSTER_NODES', 'CORS_ALLOWED_ORIGINS']);

/** The key a variable sets when running in `environment`; undefined for an unknown one, which the schema reports. */
function keyFor(path: readonly string[], environment: unknown): string[] | undefined {
  const running = environment ?? configSchema.shape.environment.parse(undefined);
  if (path.includes(RUNNING_ENVIRONMENT) && !ENVIRONMENTS.some((known) => known === running)) return undefined;
  return path.map((key) => (key === RUNNING_ENVIRONMENT ? String(running) : key));
}

/** The configuration file: GATEWAY_CONFIG's, or config/gateway.yaml. */
export function configFile(env: Env = process.env): string {
  return env.GATEWAY_CONFIG ? resolve(env.GATEWAY_CONFIG) : DEFAULT_CONFIG_FILE;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

/** Loads the configuration (`GATEWAY_CONFIG` names another file); `overrides` go over the file, under the environment variables. */
export function loadConfig(env: Env = process.env, overrides: Record<string, unknown> = {}): GatewayConfig {
  const file = configFile(env);
  let fromFile: unknown;
  try {
    fromFile = readConfigFile(file);
  } catch (cause) {
    if (!(cause instanceof ConfigFileError)) throw cause;
    // Named by the variable that chose the file, or as the default GATEWAY_CONFIG would replace.
    const setting = env.GATEWAY_CONFIG ? 'GATEWAY_CONFIG: config file' : 'config file (the default; GATEWAY_CONFIG names another)';
    throw new ConfigError(`${setting} ${cause.message}`, { cause });
  }
  const merged = deepMerge(structuredClone(fromFile) as Record<string, unknown>, overrides);
  const fromEnv = new Map<string, string>();
  for (const [name, variablePath] of Object.entries(ENV_KEYS)) {
    const value = env[name];
    // GATEWAY_ENVIRONMENT is set before the variables of the running environment's settings (ENV_KEYS's order).
    const path = keyFor(variablePath, merged.environment);
    if (value === undefined || value === '' || path === undefined) continue;
    setPath(merged, path, LIST_VARIABLES.has(name) ? value.split(',').map((item) => item.trim()) : value);
    fromEnv.set(path.join('.'), name);
  }
  // A misspelt variable would be ignored, its setting left at the default (GATEWAY_ENVIROMENT: staging, every production key refused).
  const fromEnvironment = unknownVariableFaults(env, KNOWN_VARIABLES);
  if (env.NODE_ENV === 'production' && !env.GATEWAY_ENVIRONMENT && merged.environment === undefined) {
    fromEnvironment.push(
      'GATEWAY_ENVIRONMENT: not set while NODE_ENV is production, so the gateway would serve staging; set GATEWAY_ENVIRONMENT=production (or staging), or environment in the file',
    );
  }
  const fromFileProblems: string[] = [];
  const parsed = configSchema.safeParse(merged, { error: inGatewayWords });
  if (!parsed.success) {
    // Each problem is blamed on where its value came from, an environment variable or the file: PORT=80a is not gateway.yaml's fault.
    const blame = (path: readonly PropertyKey[]) =>
      // A list variable's problem is in one of its items (redis.sentinels.0): the variable set the whole list.
      path.map((_, i) => fromEnv.get(path.slice(0, path.length - i).join('.'))).find((name) => name !== undefined);
    for (const issue of parsed.error.issues) {
      const key = issue.path.join('.');
      const envName = blame(issue.path);
      if (envName) fromEnvironment.push(`${envName} (${key}): ${issue.message}`);
      else fromFileProblems.push(`${key || '(root)'}: ${issue.message}`);
    }
    // Files the schema's faults would otherwise hide until they are fixed: one pass names every fault.
    for (const { path, problem } of unreadableFiles(merged, dirname(file))) {
      const envName = blame(path);
      if (envName) fromEnvironment.push(`${envName} (${path.join('.')}): ${problem}`);
      else fromFileProblems.push(`${path.join('.')}: ${problem}`);
    }
  }
  if (fromEnvironment.length > 0 || fromFileProblems.length > 0) {
    const sections = [
      // Each fault once: an intersection (rateLimit.limits) reports a value's fault from both its halves.
      describeProblems(['invalid environment variable ', 'invalid environment variables:'], [...new Set(fromEnvironment)]),
      describeProblems([`invalid configuration in ${file}: `, `invalid configuration in ${file}:`], [...new Set(fromFileProblems)]),
    ];
    throw new ConfigError(sections.filter(Boolean).join('\n'));
  }
  const config = parsed.data!;
  const upstreamBaseUrl = (config.upstreamUrl ?? config.environments[config.environment].upstream).replace(/\/$/, '');
  const contractPath = resolve(dirname(file), config.contract);
  const sources: VersionSource[] = [
    { key: 'contract', documentPath: contractPath, upstreamBaseUrl, deprecation: config.versionDeprecation, deprecationKey: 'versionDeprecation' },
    ...config.versions.map((version, index) => ({
      key: `versions.${index}.document`,
      documentPath: resolve(dirname(file), version.document),
      upstreamBaseUrl: version.upstreams[config.environment].replace(/\/$/, ''),
      deprecation: version.deprecation ?? null,
      deprecationKey: `versions.${index}.deprecation`,
    })),
  ];
  return deepFreeze({ ...config, upstreamBaseUrl, contractPath, sources });
}

/** One problem on one line (the usual case, and what a log line shows); several, one per indented line. */
function describeProblems([one, several]: readonly [string, string], problems: readonly string[]): string {
  if (problems.length === 0) return '';
  return problems.length === 1 ? `${one}${problems[0]}` : `${several}\n  ${problems.join('\n  ')}`;
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path.at(-1)!] = value;
}

function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): Record<string, unknown> {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (isPlainObject(value) && isPlainObject(existing)) deepMerge(existing, value);
    else target[key] = value;
  }
  return target;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** Freezes `value` and everything it holds (Dates aside): the configuration is read, never written. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value) && !(value instanceof Date)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * The variables set now whose key the file gives another value, as written: the variable wins, so editing the file's
 * value changes nothing, which a reload says (`LOG_LEVEL (logging.level)`).
 */
export function shadowedByEnvironment(env: Env = process.env): Array<{ variable: string; key: string }> {
  let fromFile: unknown;
  try {
    fromFile = readConfigFile(configFile(env));
  } catch {
    return [];
  }
  const shadowed: Array<{ variable: string; key: string }> = [];
  const environment = env.GATEWAY_ENVIRONMENT || (fromFile as Record<string, unknown> | null | undefined)?.environment;
  for (const [name, variablePath] of Object.entries(ENV_KEYS)) {
    const value = env[name];
    const path = keyFor(variablePath, environment);
    if (value === undefined || value === '' || path === undefined) continue;
    let node: unknown = fromFile;
    for (const key of path) node = (node as Record<string, unknown> | null | undefined)?.[key];
    if (node === undefined || node === null) continue;
    const written = Array.isArray(node) ? node.join(',') : String(node);
    if (written !== value) shadowed.push({ variable: name, key: path.join('.') });
  }
  return shadowed;
}
