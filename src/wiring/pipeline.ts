// One generation of the request pipeline, built from one configuration; a reload builds the next and retires this one once idle.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { createApp, type AppDependencies, type ServedVersion } from '../app.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { ApiVersion } from '../contract/api-versions.ts';
import type { AppMessages, MessagePrototypes } from '../forks/app-messages.ts';
import { compileCors, type AnnounceCors } from '../policy/cors.ts';
import type { UpstreamIdentity } from '../identity/upstream-identity.ts';
import type { UpstreamPoolReading } from '../observability/saturation-metrics.ts';
import type { CircuitBreakers } from '../proxy/circuit-breakers.ts';
import type { UpstreamPoolStats } from '../proxy/exchange.ts';
import type { BackendTls } from '../proxy/upstream-tls.ts';
import type { Serving } from '../server/request-tracker.ts';
import { allOperations } from '../contract/api-versions.ts';
import type { NoiseBook } from '../shadow/noise-book.ts';
import type { ShadowOutcomeSink } from '../shadow/shadow-outcome.ts';
import { createShadowTraffic } from '../shadow/shadow-traffic.ts';
import { createVersionProxies } from './version-proxies.ts';

/** What every generation shares: the app's long-lived dependencies, the circuit breakers, and the shadow's report and noise. */
export type PipelineShared = Omit<AppDependencies, 'config' | 'versions' | 'cors'> & {
  breakers: CircuitBreakers;
  /** Where shadow comparisons go (the report store). */
  shadowSink: ShadowOutcomeSink;
  /** What this replica learnt about noise, kept across reloads. */
  noise: NoiseBook;
};

export interface Pipeline {
  readonly config: GatewayConfig;
  readonly identity: UpstreamIdentity;
  /** The TLS its upstream pools connect with. */
  readonly upstreamTls: BackendTls;
  /** Serves a request, counted as this generation's until the tracker tells it the response closed (`answered`). */
  handle(req: IncomingMessage, res: ServerResponse): Serving;
  /** The prototypes this generation's app gives requests and responses: new ones are best made with them. */
  readonly prototypes: MessagePrototypes;
  /** This generation's CORS headers, for answers given before the pipeline (load shedding); undefined: CORS off. */
  announceCors: AnnounceCors | undefined;
  /** Closes the upstream pools once this generation's requests are all answered (at the latest after `graceMs`). */
  retire(graceMs: number): Promise<void>;
  /** Each version's upstream pool now. */
  upstreamPools(): UpstreamPoolReading[];
}

/** Builds the documents' proxies and the app for `config`; nothing is listened on or connected yet. */
export function buildPipeline(
  config: GatewayConfig,
  versions: readonly ApiVersion[],
  identity: UpstreamIdentity,
  upstreamTls: BackendTls,
  shared: PipelineShared,
): Pipeline {
  const { breakers, shadowSink, noise, ...dependencies } = shared;
  const { metrics, logger, clock } = dependencies;
  // Its own pool and bounds for this generation (a reload takes up new shadow settings with the next one).
  const shadow = createShadowTraffic({
    settings: config.shadow,
    operations: allOperations(versions),
    identity,
    tls: { production: upstreamTls.connect, ...(upstreamTls.shadow ? { staging: upstreamTls.shadow } : {}) },
    sink: shadowSink,
    noise,
    counters: { compared: metrics.shadowCompared, differed: metrics.shadowDiffered },
    clock,
    onError: (error) => logger.warn({ err: error }, 'a shadow comparison failed in the gateway'),
  });
  let served: ServedVersion[];
  try {
    served = createVersionProxies(versions, {
      config,
      identityHeaders: identity.headersFor,
      breakers,
      upstreamTls,
      onServerCertificate: metrics.tls.upstreamSeen,
      onConnectionRetired: metrics.upstreamConnectionRetired,
      shadow,
    });
  } catch (error) {
    void shadow.close();
    throw error;
  }
  const closePools = () => Promise.all([...served.map((version) => version.proxy.close()), shadow.close()]).then(() => undefined);
  // Once for the generation: its app's stages and the answers given before the app (load shedding) share it.
  const cors = compileCors(
    config,
    served.map(({ contract }) => contract),
  );
  let app: ReturnType<typeof createApp>;
  try {
    app = createApp({ ...dependencies, config, versions: served, cors });
  } catch (error) {
    // Nothing will ever use the pools just opened for it.
    void closePools();
    throw error;
  }

  // This generation's own requests, apart from the process's count (the request tracker's): a retired
  // generation's pools close once its requests are answered, while the next generation's go on.
  let unanswered = 0;
  let wakeWhenIdle: (() => void) | undefined;
  const serving: Serving = {
    answered() {
      unanswered--;
      if (unanswered === 0) wakeWhenIdle?.();
    },
  };
  return {
    config,
    identity,
    upstreamTls,
    announceCors: cors?.announce,
    prototypes: { request: app.request, response: app.response },
    handle(req, res) {
      unanswered++;
      app(req, res);
      return serving;
    },
    async retire(graceMs) {
      if (unanswered > 0) {
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
    upstreamPools: () =>
      served.map((version) => ({ basePath: version.contract.basePath, stats: version.proxy.stats(), maxConnections: config.upstream.maxSockets })),
  };
}

/** The generation new requests go to: swapped whole, so a request meets one configuration from start to end. */
export interface LivePipeline {
  readonly current: Pipeline;
  /** Shutting down: `swap` retires what it is given at once (a reload during shutdown is refused). */
  readonly closed: boolean;
  /** Serves a request with the current generation, which it returns. */
  handle(req: IncomingMessage, res: ServerResponse): Serving;
  /** New requests go to `next` from now on; the previous generation is retired once its requests are answered. */
  swap(next: Pipeline): void;
  /** Closes every generation's pools (shutdown, after the listeners drained). */
  close(): Promise<void>;
  /** Each version's upstream pools now, the current and the retiring generations' added up; the most allowed is the current one's. */
  upstreamPools(): UpstreamPoolReading[];
}

/** `graceFor`: how long a retired generation's requests may still take; `messages` adopt the live generation's prototypes. */
export function createLivePipeline(
  first: Pipeline,
  graceFor: (retired: Pipeline) => number,
  logger: Logger,
  messages: Pick<AppMessages, 'adopt'>,
): LivePipeline {
  let current = first;
  messages.adopt(first.prototypes);
  let closed = false;
  const retiring = new Set<Promise<void>>();
  const retiringGenerations = new Set<Pipeline>();
  function retire(generation: Pipeline, graceMs: number): void {
    const retired = generation
      .retire(graceMs)
      .catch((error: unknown) => logger.warn({ err: error }, "closing a retired configuration's upstream connections failed"));
    retiring.add(retired);
    retiringGenerations.add(generation);
    void retired.finally(() => {
      retiring.delete(retired);
      retiringGenerations.delete(generation);
    });
  }
  return {
    get current() {
      return current;
    },
    get closed() {
      return closed;
    },
    handle: (req, res) => current.handle(req, res),
    swap(next) {
      if (closed) return retire(next, 0);
      const previous = current;
      current = next;
      messages.adopt(next.prototypes);
      retire(previous, graceFor(previous));
    },
    async close() {
      closed = true;
      retire(current, 0);
      await Promise.all(retiring);
    },
    upstreamPools() {
      const byBasePath = new Map<string, UpstreamPoolReading>();
      // A Set: on shutdown the current generation is also a retiring one.
      for (const generation of new Set([current, ...retiringGenerations])) {
        for (const reading of generation.upstreamPools()) {
          const seen = byBasePath.get(reading.basePath);
          byBasePath.set(reading.basePath, seen ? { ...seen, stats: addedUp(seen.stats, reading.stats) } : reading);
        }
      }
      return [...byBasePath.values()];
    },
  };
}

function addedUp(a: UpstreamPoolStats, b: UpstreamPoolStats): UpstreamPoolStats {
  return { connected: a.connected + b.connected, free: a.free + b.free, running: a.running + b.running, queued: a.queued + b.queued };
}
