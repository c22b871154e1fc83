// SIGHUP: re-read the configuration and the documents, check all of it, then serve new requests with it, or keep the old one and say why.
import type { Logger } from 'pino';
import { configurationHash, isRestartSetting, planReload, type ReloadPlan } from '../config/reload-plan.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { allOperations, loadApiVersions, type ApiVersion } from '../contract/api-versions.ts';
import { operationSunsets, type Operation } from '../contract/operations.ts';
import { loadUpstreamIdentity, type UpstreamIdentity } from '../identity/upstream-identity.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { compileBrownoutSchedule, type BrownoutBoard } from '../policy/brownouts.ts';
import type { Clock } from '../time/clock.ts';
import type { LivePipeline, Pipeline } from './pipeline.ts';

export interface ReloadDeps {
  /** Reads the configuration as start-up did (file, environment): throws a ConfigError naming the key. */
  loadConfig: () => GatewayConfig;
  /** The environment variables that override a value the file now gives (see shadowedByEnvironment). */
  shadowedSettings?: () => Array<{ variable: string; key: string }>;
  live: LivePipeline;
  build: (config: GatewayConfig, versions: readonly ApiVersion[], identity: UpstreamIdentity) => Pipeline;
  brownouts: BrownoutBoard;
  /**
   * Reads and checks what else the configuration names (the admin token file) with the rest, before
   * anything changes, throwing to refuse the reload; the function it returns takes it up after the swap.
   */
  alsoReload?: (config: GatewayConfig) => () => void;
  logger: Logger;
  metrics: GatewayMetrics;
  clock: Clock;
}

export type ReloadOutcome = { result: 'success'; hash: string; needRestart: string[] } | { result: 'failure'; reason: string };

/** A configuration error's own words (they name the key); anything else by its message, never a stack. */
function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Returns the reload function. Reloads run one at a time; the SIGHUPs that arrive during one make one
 * more, after it (a tool that signals on every file change asks for the last state, not for each).
 */
export function createReload(deps: ReloadDeps): () => Promise<ReloadOutcome> {
  const { live, logger, metrics } = deps;

  function refused(reason: string): ReloadOutcome {
    metrics.configReload('failure');
    logger.error({ reason }, `configuration reload refused, the running configuration stays: ${reason}`);
    return { result: 'failure', reason };
  }

  async function reload(): Promise<ReloadOutcome> {
    if (live.closed) return refused('the gateway is shutting down');
    let plan: ReloadPlan;
    let next: Pipeline;
    let schedule: ReturnType<typeof compileBrownoutSchedule>;
    let hash: string;
    let operations: Operation[];
    let takeUp: (() => void) | undefined;
    try {
      // Everything is read and checked before anything changes: the settings together, the documents,
      // the brownout windows against them, the identity key files. A refusal changes nothing.
      plan = planReload(live.current.config, deps.loadConfig());
      const { effective } = plan;
      const versions = loadApiVersions(effective.sources);
      operations = allOperations(versions);
      schedule = compileBrownoutSchedule(operations, effective.deprecations);
      const identity = await loadUpstreamIdentity(effective.upstreamIdentity, { environment: effective.environment, clock: deps.clock });
      hash = configurationHash(effective);
      takeUp = deps.alsoReload?.(effective);
      // Shut down while the key files were read: nothing is built that nobody would close.
      if (live.closed) return refused('the gateway is shutting down');
      next = deps.build(effective, versions, identity);
    } catch (error) {
      return refused(reasonOf(error));
    }
    live.swap(next);
    takeUp?.();
    deps.brownouts.replaceSchedule(schedule);
    metrics.deprecationsChanged(deps.brownouts.operations, operationSunsets(operations));
    metrics.configReload('success');
    // Written before the new level applies: a reload to `warn` still says what it did.
    if (plan.needRestart.length > 0) {
      logger.warn({ settings: plan.needRestart }, `configuration reloaded; changes to ${plan.needRestart.join(', ')} take effect only after a restart`);
    }
    // Settings a reload would take up, but for the variable: the file's edit is silently not used otherwise.
    const shadowed = (deps.shadowedSettings?.() ?? []).filter(({ key }) => !isRestartSetting(key)).map(({ variable, key }) => `${variable} (${key})`);
    if (shadowed.length > 0) {
      logger.warn({ settings: shadowed }, `configuration reloaded; environment variables override the file's value of ${shadowed.join(', ')}`);
    }
    logger.info({ configHash: hash, identity: next.identity.summary }, 'configuration reloaded');
    logger.level = next.config.logging.level;
    return { result: 'success', hash, needRestart: plan.needRestart };
  }

  let running: Promise<ReloadOutcome> | undefined;
  let again: Promise<ReloadOutcome> | undefined;
  return function reloadInTurn(): Promise<ReloadOutcome> {
    if (!running) {
      running = reload().finally(() => (running = undefined));
      return running;
    }
    // One more after the one under way, shared by every SIGHUP until it starts.
    again ??= running.then((): Promise<ReloadOutcome> => {
      again = undefined;
      return reloadInTurn();
    });
    return again;
  };
}
