// SIGHUP: re-read the configuration and the documents, check all of it, then serve new requests with it, or keep the old one and say why.
import type { Logger } from 'pino';
import { planReload, configurationHash } from '../config/reload-plan.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { allOperations, loadApiVersions } from '../contract/api-versions.ts';
import { loadUpstreamIdentity } from '../identity/upstream-identity.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { compileBrownoutSchedule, type BrownoutBoard } from '../policy/brownouts.ts';
import type { Clock } from '../time/clock.ts';
import type { LivePipeline, Pipeline } from './pipeline.ts';
import type { UpstreamIdentity } from '../identity/upstream-identity.ts';
import type { ApiVersion } from '../contract/api-versions.ts';

export interface ReloadDeps {
  /** Reads the configuration as start-up did (file, environment): throws a ConfigError naming the key. */
  loadConfig: () => GatewayConfig;
  live: LivePipeline;
  build: (config: GatewayConfig, versions: readonly ApiVersion[], identity: UpstreamIdentity) => Pipeline;
  brownouts: BrownoutBoard;
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
 * Returns the reload function. Reloads run one at a time: a second SIGHUP during one is served after it,
 * against what it left in force.
 */
export function createReload(deps: ReloadDeps): () => Promise<ReloadOutcome> {
  const { live, logger, metrics } = deps;
  let queue: Promise<unknown> = Promise.resolve();

  async function reload(): Promise<ReloadOutcome> {
    const running = live.current.config;
    let plan: ReturnType<typeof planReload>;
    let next: Pipeline;
    let schedule: ReturnType<typeof compileBrownoutSchedule>;
    let hash: string;
    try {
      // Everything is read and checked before anything changes: the documents, the brownout windows
      // against them, the identity key files; a refusal leaves the running configuration serving.
      plan = planReload(running, deps.loadConfig());
      const { effective } = plan;
      const versions = loadApiVersions(effective.sources);
      schedule = compileBrownoutSchedule(allOperations(versions), effective.deprecations);
      const identity = await loadUpstreamIdentity(effective.upstreamIdentity, { environment: effective.environment, clock: deps.clock });
      hash = configurationHash(effective);
      next = deps.build(effective, versions, identity);
    } catch (error) {
      const reason = reasonOf(error);
      metrics.configReload('failure');
      logger.error({ reason }, `configuration reload refused, the running configuration stays: ${reason}`);
      return { result: 'failure', reason };
    }
    live.swap(next);
    deps.brownouts.replaceSchedule(schedule);
    logger.level = next.config.logging.level;
    metrics.configReload('success');
    if (plan.needRestart.length > 0) {
      logger.warn({ settings: plan.needRestart }, `configuration reloaded; changes to ${plan.needRestart.join(', ')} take effect only after a restart`);
    }
    logger.info({ configHash: hash, identity: next.identity.summary }, 'configuration reloaded');
    return { result: 'success', hash, needRestart: plan.needRestart };
  }

  return function reloadInTurn() {
    const turn = queue.then(reload);
    queue = turn.catch(() => undefined);
    return turn;
  };
}
