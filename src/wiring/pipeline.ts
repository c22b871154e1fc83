// One generation of the request pipeline, built from one configuration; a reload builds the next and retires this one once idle.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Store as RateLimitStore } from 'express-rate-limit';
import type { Logger } from 'pino';
import { createApp, type ServedVersion } from '../app.ts';
import type { KeyHasher } from '../auth/key-hash.ts';
import type { KeyStore } from '../auth/key-store.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { ApiVersion } from '../contract/api-versions.ts';
import type { UpstreamIdentity } from '../identity/upstream-identity.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { BrownoutBoard } from '../policy/brownouts.ts';
import type { Clock } from '../time/clock.ts';
import { createVersionProxies } from './version-proxies.ts';

/** What every generation shares: the stores and their connections, the clock, the brownout board, logs and metrics. */
export interface PipelineShared {
  keyStore: KeyStore;
  rateLimitStore?: RateLimitStore;
  hashKey: KeyHasher;
  clock: Clock;
  brownouts: BrownoutBoard;
  logger: Logger;
  metrics: GatewayMetrics;
}

export interface Pipeline {
  readonly config: GatewayConfig;
  readonly identity: UpstreamIdentity;
  /** Serves a request; counted as this generation's until its response closes. */
  handle: RequestListener;
  /** Closes the upstream pools once this generation's requests are all answered (at the latest after `graceMs`). */
  retire(graceMs: number): Promise<void>;
}

/** Builds the documents' proxies and the app for `config`; nothing is listened on or connected yet. */
export function buildPipeline(config: GatewayConfig, versions: readonly ApiVersion[], identity: UpstreamIdentity, shared: PipelineShared): Pipeline {
  const served: ServedVersion[] = createVersionProxies(versions, {
    config,
    metrics: shared.metrics,
    logger: shared.logger,
    identityHeaders: identity.headersFor,
  });
  const app = createApp({
    config,
    versions: served,
    keyStore: shared.keyStore,
    ...(shared.rateLimitStore ? { rateLimitStore: shared.rateLimitStore } : {}),
    hashKey: shared.hashKey,
    clock: shared.clock,
    brownouts: shared.brownouts,
    logger: shared.logger,
    metrics: shared.metrics,
  });

  let inFlight = 0;
  let wakeWhenIdle: (() => void) | undefined;
  const settled = () => {
    inFlight--;
    if (inFlight === 0) wakeWhenIdle?.();
  };
  const closePools = () => Promise.all(served.map((version) => version.proxy.close())).then(() => undefined);

  return {
    config,
    identity,
    handle(req: IncomingMessage, res: ServerResponse) {
      inFlight++;
      // `on`, not `once`: a response closes once, and `once` would allocate a wrapper per request.
      res.on('close', settled);
      app(req, res);
    },
    async retire(graceMs) {
      if (inFlight > 0) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          wakeWhenIdle = resolve;
          // A request still here by then has outlived every upstream timeout: its exchange is over.
          timer = setTimeout(resolve, graceMs);
        });
        clearTimeout(timer);
      }
      await closePools();
    },
  };
}

/** The generation new requests go to: swapped whole, so a request meets one configuration from start to end. */
export interface LivePipeline {
  readonly current: Pipeline;
  handle: RequestListener;
  /** New requests go to `next` from now on; the previous generation is retired once its requests are answered. */
  swap(next: Pipeline): void;
  /** Closes every generation's pools (shutdown, after the listeners drained). */
  close(): Promise<void>;
}

/** `graceFor` says how long a retired generation's requests may still take (its own timeouts). */
export function createLivePipeline(first: Pipeline, graceFor: (retired: Pipeline) => number): LivePipeline {
  let current = first;
  const retiring = new Set<Promise<void>>();
  return {
    get current() {
      return current;
    },
    handle: (req, res) => current.handle(req, res),
    swap(next) {
      const previous = current;
      current = next;
      const retired = previous.retire(graceFor(previous));
      retiring.add(retired);
      void retired.finally(() => retiring.delete(retired));
    },
    async close() {
      await Promise.all([current.retire(0), ...retiring]);
    },
  };
}
