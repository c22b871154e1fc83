// What a configuration reload (SIGHUP) can change in a running gateway, and what only a restart can: a pure plan, read by the reload.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { deepFreeze } from './load-config.ts';
import type { GatewayConfig } from './schema.ts';

/**
 * Settings a running process cannot take up: its listeners, its Redis connections and the stores
 * built on them, the key cache, the upstream addresses its pools and readiness checks were built for,
 * and what it reads only at start or at shutdown. Everything else (rate limits, deprecations and
 * brownouts, stability access, request limits, upstream timeouts and breaker, header lists, identity
 * keys, log level, the documents' contents) is taken up by the next request after a reload.
 */
export const RESTART_SETTINGS: readonly string[] = [
  'environment',
  'environments',
  'upstreamUrl',
  'versions',
  'listen',
  'redis',
  'auth',
  'rateLimit.mode',
  'rateLimit.syncMs',
  'deprecationReport',
  'shutdown',
];

export interface ReloadPlan {
  /** The configuration to serve with: the new one, with the running values of RESTART_SETTINGS. */
  effective: GatewayConfig;
  /** The RESTART_SETTINGS whose value changed in the file or the environment: they wait for a restart. */
  needRestart: string[];
}

function valueAt(config: GatewayConfig, path: string): unknown {
  let node: unknown = config;
  for (const key of path.split('.')) node = (node as Record<string, unknown> | undefined)?.[key];
  return node;
}

function withValueAt(config: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let node = config;
  for (const key of keys.slice(0, -1)) {
    node[key] = { ...(node[key] as Record<string, unknown>) };
    node = node[key] as Record<string, unknown>;
  }
  node[keys.at(-1)!] = value;
}

/** Dates compare by their instant, like every other value by its JSON. */
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * The plan for serving `next` in a process started with `running`. The versions' upstream addresses
 * stay the running ones; while the list of versions is unchanged, their documents are re-read and
 * their deprecations taken up, otherwise the running list stays whole until a restart.
 */
export function planReload(running: GatewayConfig, next: GatewayConfig): ReloadPlan {
  const needRestart = RESTART_SETTINGS.filter((path) => !same(valueAt(running, path), valueAt(next, path)));
  const effective: Record<string, unknown> = { ...next };
  for (const path of RESTART_SETTINGS) withValueAt(effective, path, valueAt(running, path));
  effective.upstreamBaseUrl = running.upstreamBaseUrl;
  const sameVersions = next.sources.length === running.sources.length && next.sources.every((source, i) => source.documentPath === running.sources[i]!.documentPath);
  effective.sources = sameVersions
    ? next.sources.map((source, i) => ({ ...source, upstreamBaseUrl: running.sources[i]!.upstreamBaseUrl }))
    : running.sources;
  if (!sameVersions) effective.contractPath = running.contractPath;
  return { effective: deepFreeze(effective) as GatewayConfig, needRestart };
}

/**
 * A short digest of what a configuration serves: its settings and the bytes of every document it
 * names, so an operator can tell which replicas run the same thing (logged at start and on reload).
 */
export function configurationHash(config: GatewayConfig): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(config));
  for (const source of config.sources) hash.update(readFileSync(source.documentPath));
  return hash.digest('hex').slice(0, 16);
}
