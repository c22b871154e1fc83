// What a configuration reload (SIGHUP) can change in a running gateway, and what only a restart can: a pure plan, read by the reload.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { deepFreeze, isPlainObject } from './load-config.ts';
import type { GatewayConfig } from './schema.ts';

/**
 * Settings a running process cannot take up: listeners, Redis and its stores, the key cache, the upstream addresses
 * its pools and probes were built for, what is read only at start or shutdown, the pod's resources. Everything else
 * is taken up by the next request after a reload.
 */
export const RESTART_SETTINGS: readonly string[] = [
  'environment',
  'environments',
  'upstreamUrl',
  'listen',
  'redis',
  'auth',
  'adminApi.maxFailedAuthPerMinute',
  'rateLimit.mode',
  'rateLimit.syncMs',
  'deprecationReport',
  'usage',
  'shadow.report',
  'shutdown',
  'resources',
  'certificates',
];

/** Whether the config key `key` (dotted) is, or lies under, a setting only a restart changes. */
export function isRestartSetting(key: string): boolean {
  return RESTART_SETTINGS.some((path) => key === path || key.startsWith(`${path}.`));
}

/**
 * The documents served and their upstreams, which probes and metrics were built for: their contents and deprecations
 * are taken up on a reload while the list stays the same; a changed list waits for a restart.
 */
const DOCUMENT_LIST = ['contract', 'versions', 'versionDeprecation'] as const;

export class ReloadRefusal extends Error {
  override name = 'ReloadRefusal';
}
export interface ReloadPlan {
  /** The configuration to serve with: the new one, with the running values of RESTART_SETTINGS. */
  effective: GatewayConfig;
  /** The keys under RESTART_SETTINGS whose value changed in the file or the environment (`auth.cache.ttlMs`): they wait for a restart. */
  needRestart: string[];
  /** The keys whose new value the reload takes up (`rateLimit.windowMs`). */
  changed: string[];
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

/** The list of documents and their upstreams, without what a reload may change (their deprecations). */
const documentList = (config: GatewayConfig) => [config.contract, config.versions.map(({ document, upstreams }) => ({ document, upstreams }))];

/** The plan for serving `next` in a process started with `running`; a ReloadRefusal names a key that clashes with the kept ones. */
export function planReload(running: GatewayConfig, next: GatewayConfig): ReloadPlan {
  const needRestart = RESTART_SETTINGS.flatMap((path) => changedKeys(valueAt(running, path), valueAt(next, path), path));
  const effective: Record<string, unknown> = { ...next };
  for (const path of RESTART_SETTINGS) withValueAt(effective, path, valueAt(running, path));
  effective.upstreamBaseUrl = running.upstreamBaseUrl;
  if (same(documentList(running), documentList(next))) {
    effective.sources = next.sources.map((source, i) => ({ ...source, upstreamBaseUrl: running.sources[i]!.upstreamBaseUrl }));
  } else {
    for (const key of DOCUMENT_LIST) {
      effective[key] = running[key];
      needRestart.push(...changedKeys(running[key], next[key], key));
    }
    effective.sources = running.sources;
    effective.contractPath = running.contractPath;
  }
  const plan = { effective: deepFreeze(effective) as GatewayConfig, needRestart };
  checkKeptTogether(plan.effective);
  return { ...plan, changed: changedSettings(running, plan.effective) };
}

/** What loadConfig derives from the settings (the documents' paths and upstreams): not settings an operator writes. */
const DERIVED: ReadonlySet<string> = new Set(['upstreamBaseUrl', 'contractPath', 'sources']);

/** The settings whose value differs between two configurations, as dotted keys; never their values (a password's key, not the password). */
export function changedSettings(before: GatewayConfig, after: GatewayConfig): string[] {
  return Object.keys({ ...before, ...after })
    .filter((key) => !DERIVED.has(key))
    .flatMap((key) => changedKeys((before as Record<string, unknown>)[key], (after as Record<string, unknown>)[key], key));
}

/** The leaf keys under `path` whose values differ; a list, or a value that changed type, is one key. */
function changedKeys(before: unknown, after: unknown, path: string): string[] {
  if (same(before, after)) return [];
  if (!isPlainObject(before) || !isPlainObject(after)) return [path];
  return Object.keys({ ...before, ...after }).flatMap((key) => changedKeys(before[key], after[key], `${path}.${key}`));
}

/** The schema's rules across settings a reload may take up and settings it keeps (config/schema.ts, rateLimit). */
function checkKeptTogether(config: GatewayConfig): void {
  const { mode, syncMs, windowMs, onStoreError } = config.rateLimit;
  if (mode !== 'local-first') return;
  if (syncMs * 4 > windowMs)
    throw new ReloadRefusal(`rateLimit.windowMs: must be at least four times the running rateLimit.syncMs (${syncMs} ms) in local-first mode`);
  if (onStoreError !== 'allow') throw new ReloadRefusal('rateLimit.onStoreError: deny applies to the exact mode only; the running mode is local-first');
}

/** A digest of the settings and every document's bytes, so an operator can tell which replicas run the same thing. */
export function configurationHash(config: GatewayConfig): string {
  const hash = createHash('sha256');
  // Without Redis's credentials: a digest of otherwise known settings would let a log reader test guesses.
  const redisUrl = new URL(config.redis.url);
  redisUrl.username = '';
  redisUrl.password = '';
  hash.update(JSON.stringify({ ...config, redis: { ...config.redis, url: redisUrl.href, password: null } }));
  for (const source of config.sources) hash.update(readFileSync(source.documentPath));
  return hash.digest('hex').slice(0, 16);
}
