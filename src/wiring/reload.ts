// A reload (SIGHUP, POST /admin/config/reload): re-read the configuration and the documents, check all of it, then serve new requests with it, or keep the old one and say why.
import type { Logger } from 'pino';
import { isRestartSetting, planReload, type ReloadPlan } from '../config/reload-plan.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { ApiVersion } from '../contract/api-versions.ts';
import { operationSunsets } from '../contract/operations.ts';
import type { UpstreamIdentity } from '../identity/upstream-identity.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { BrownoutBoard } from '../policy/brownouts.ts';
import type { BackendTls } from '../proxy/upstream-tls.ts';
import type { ListenerCertificates } from '../server/listener-tls.ts';
import type { Clock } from '../time/clock.ts';
import { checkConfig, ConfigCheckError, type CheckedConfig } from './check-config.ts';
import { reportClientCertificates } from './client-certificates.ts';
import type { LivePipeline, Pipeline } from './pipeline.ts';

export interface ReloadDeps {
  /** Reads the configuration as start-up did (file, environment): throws a ConfigError naming the key. */
  loadConfig: () => GatewayConfig;
  /** The environment variables that override a value the file now gives (see shadowedByEnvironment). */
  shadowedSettings?: () => Array<{ variable: string; key: string }>;
  live: LivePipeline;
  build: (config: GatewayConfig, versions: readonly ApiVersion[], identity: UpstreamIdentity, upstreamTls: BackendTls) => Pipeline;
  /** The TLS listeners' pairs: a reload's, read and checked with everything else, are taken up by their new connections. */
  certificates: ListenerCertificates;
  brownouts: BrownoutBoard;
  /** Reads and checks the admin token file before anything changes (throws to refuse); what it returns takes it up after the swap. */
  alsoReload: (config: GatewayConfig) => () => void;
  /** Reads the pepper as start-up did, so a file a reload accepts is one a restart accepts (see CheckOptions). */
  readPepper?: (config: GatewayConfig) => unknown;
  logger: Logger;
  metrics: GatewayMetrics;
  clock: Clock;
}

/** What a reload did, by key: `changed` is taken up by the next request, `needRestart` waits for a restart. */
export type ReloadOutcome = { result: 'success'; hash: string; changed: string[]; needRestart: string[] } | { result: 'failure'; reason: string };

/** A configuration error's own words (they name the key), each fault once; anything else by its message, never a stack. */
function faultsOf(error: unknown): readonly string[] {
  if (error instanceof ConfigCheckError) return error.faults;
  return [error instanceof Error ? error.message : String(error)];
}

/** Reloads run one at a time; the SIGHUPs during one make one more after it (the last state is asked for, not each). */
export function createReload(deps: ReloadDeps): () => Promise<ReloadOutcome> {
  const { live, logger, metrics } = deps;

  function refused(faults: readonly string[]): ReloadOutcome {
    metrics.configReload('failure');
    // The faults once, in the message: a field repeating them would print each schema error twice.
    const reason = faults.join('\n');
    logger.error(`configuration reload refused, the running configuration stays: ${reason}`);
    return { result: 'failure', reason };
  }

  async function reload(): Promise<ReloadOutcome> {
    if (live.closed) return refused(['the gateway is shutting down']);
    let plan: ReloadPlan;
    let next: Pipeline;
    let checked: CheckedConfig;
    try {
      // Everything is read and checked before anything changes, as `npm run config -- validate` does: a refusal changes nothing.
      const loaded = deps.loadConfig();
      plan = planReload(live.current.config, loaded);
      const { readPepper } = deps;
      checked = await checkConfig(plan.effective, {
        clock: deps.clock,
        readAdminTokens: deps.alsoReload,
        // `effective` keeps the running pepper file; the loaded one is what the next restart reads, so it is checked.
        ...(readPepper ? { readPepper: () => readPepper(loaded) } : {}),
      });
      // Shut down while the key files were read: nothing is built that nobody would close.
      if (live.closed) return refused(['the gateway is shutting down']);
      next = deps.build(plan.effective, checked.versions, checked.identity, checked.upstreamTls);
    } catch (error) {
      return refused(faultsOf(error));
    }
    const { changed, needRestart } = plan;
    live.swap(next);
    checked.takeUp();
    deps.certificates.takeUp(checked.listenerPairs);
    reportClientCertificates(metrics.tls, plan.effective.environment, checked.upstreamTls);
    deps.brownouts.replaceSchedule(checked.schedule);
    metrics.deprecationsChanged(deps.brownouts.operations, operationSunsets(checked.operations));
    metrics.configReload('success');
    // Written before the new level applies: a reload to `warn` still says what it did.
    if (needRestart.length > 0) {
      logger.warn({ settings: needRestart }, `configuration reloaded; changes to ${needRestart.join(', ')} take effect only after a restart`);
    }
    // Settings a reload would take up, but for the variable: the file's edit is silently not used otherwise.
    const shadowed = (deps.shadowedSettings?.() ?? []).filter(({ key }) => !isRestartSetting(key)).map(({ variable, key }) => `${variable} (${key})`);
    if (shadowed.length > 0) {
      logger.warn({ settings: shadowed }, `configuration reloaded; environment variables override the file's value of ${shadowed.join(', ')}`);
    }
    logger.info({ configHash: checked.hash, changed, identity: next.identity.summary }, 'configuration reloaded');
    logger.level = next.config.logging.level;
    return { result: 'success', hash: checked.hash, changed, needRestart };
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
