// Every check a loaded configuration passes before it is served: one function for a reload (SIGHUP, the admin API) and `npm run config -- validate`.
import { loadAdminTokens } from '../admin-api/tokens.ts';
import { loadPepper } from '../auth/pepper.ts';
import { configurationHash } from '../config/reload-plan.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { allOperations, loadApiVersions, type ApiVersion } from '../contract/api-versions.ts';
import type { Operation } from '../contract/operations.ts';
import { loadUpstreamIdentity, type UpstreamIdentity } from '../identity/upstream-identity.ts';
import { compileBrownoutSchedule, type BrownoutSchedule } from '../policy/brownouts.ts';
import { readBackendTls, type BackendTls } from '../proxy/upstream-tls.ts';
import { readListenerPairs, type ListenerPairs } from '../server/listener-tls.ts';
import type { Clock } from '../time/clock.ts';

/** What the checks read, ready to serve with. */
export interface CheckedConfig {
  versions: ApiVersion[];
  operations: Operation[];
  schedule: BrownoutSchedule;
  identity: UpstreamIdentity;
  /** The running environment's upstream TLS, its files read. */
  upstreamTls: BackendTls;
  /** The TLS listeners' certificate pairs, read from the running paths (`listen` is a restart setting). */
  listenerPairs: ListenerPairs;
  /** The digest logged at start and on reload (configurationHash). */
  hash: string;
  /** Puts in force what `readAdminTokens` read. */
  takeUp: () => void;
}

export interface CheckOptions {
  clock: Clock;
  /** Reads and checks the admin token file (throws to refuse); returns what puts the tokens in force. */
  readAdminTokens: (config: GatewayConfig) => () => void;
  /** Reads the pepper as start-up does (loadPepper), throwing to refuse; absent where keys are kept in memory. */
  readPepper?: (config: GatewayConfig) => unknown;
}

/** Refused: each fault once, each naming its key or file. */
export class ConfigCheckError extends Error {
  override name = 'ConfigCheckError';
  readonly faults: readonly string[];
  constructor(faults: readonly string[]) {
    super(faults.join('\n'));
    this.faults = faults;
  }
}

/** A check's own words (they name the key or the file); never a stack. */
const faultOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Runs every check start-up runs after the schema; each runs even when another failed, so one pass names every fault. */
export async function checkConfig(config: GatewayConfig, options: CheckOptions): Promise<CheckedConfig> {
  const faults: string[] = [];
  function attempt<T>(check: () => T): T | undefined {
    try {
      return check();
    } catch (error) {
      faults.push(faultOf(error));
      return undefined;
    }
  }
  const versions = attempt(() => loadApiVersions(config.sources));
  const operations = versions && allOperations(versions);
  // The windows name operations: without the documents there is nothing to check them against.
  const schedule = operations && attempt(() => compileBrownoutSchedule(operations, config.deprecations));
  const identity = await loadUpstreamIdentity(config.upstreamIdentity, { environment: config.environment, clock: options.clock }).catch(
    (error: unknown) => void faults.push(faultOf(error)),
  );
  const upstreamTls = attempt(() => readBackendTls(config));
  const listenerPairs = attempt(() => readListenerPairs(config.listen));
  const takeUp = attempt(() => options.readAdminTokens(config));
  // Read at start-up only (auth is a restart setting), checked here too: a file a reload accepts is one a restart accepts.
  if (options.readPepper) attempt(() => options.readPepper?.(config));
  const hash = versions && attempt(() => configurationHash(config));
  if (faults.length > 0 || !versions || !operations || !schedule || !identity || !upstreamTls || !listenerPairs || !takeUp || hash === undefined) {
    throw new ConfigCheckError(faults);
  }
  return { versions, operations, schedule, identity, upstreamTls, listenerPairs, hash, takeUp };
}

/** A reload's checks for a configuration no gateway serves yet (`npm run config -- validate`), nothing put in force. */
export function checkBeforeStart(config: GatewayConfig, options: { clock: Clock; env?: Readonly<Record<string, string | undefined>> }): Promise<CheckedConfig> {
  return checkConfig(config, {
    clock: options.clock,
    readAdminTokens: (checked) => {
      if (checked.adminApi.tokenFile !== null) loadAdminTokens(checked.adminApi.tokenFile);
      return () => undefined;
    },
    readPepper: (checked) => loadPepper(checked, options.env),
  });
}
