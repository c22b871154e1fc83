// createApp: the gateway's request pipeline, in the order every request meets it.
// Before it, the server's request tracker (src/server/request-tracker.ts) has made the request's record
// (request id, path and query split once), admitted or shed it, and hooked its completion (metrics, access log).
// Here, its target is checked first, then the API catalog is answered at its well-known path, or the request meets
// the stages of the version its path is under (listed below, in order), or a 404; the app's router runs all of that
// as its one layer (at the end).
import express, { type Express, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import type { KeyHasher } from './auth/key-hash.ts';
import type { KeyStore } from './auth/key-store.ts';
import { createAuthenticate } from './auth/authenticate.ts';
import type { GatewayConfig, VersionDeprecation } from './config/schema.ts';
import type { Contract } from './contract/compile-contract.ts';
import { createMatchOperation, createRequireOperation } from './contract/match-operation.ts';
import { createValidateRequest } from './contract/validate-request.ts';
import { compileDiscovery } from './discovery/discovery.ts';
import { createErrorHandler, notFound } from './errors/error-handler.ts';
import type { Clock } from './time/clock.ts';
import { createRequestTarget } from './server/request-target.ts';
import { inOrder } from './pipeline/in-order.ts';
import type { GatewayMetrics } from './observability/metrics.ts';
import { createBrownoutEnforcement } from './policy/brownout-enforcement.ts';
import { createCorsHeaders, createPreflight, type CompiledCors } from './policy/cors.ts';
import type { BrownoutBoard } from './policy/brownouts.ts';
import { compileDeprecationNotices, createDeprecationNotice, createSunsetEnforcement } from './policy/deprecation.ts';
import type { LimitStore } from './limits/limit-store.ts';
import { createRateLimit } from './limits/rate-limit.ts';
import { reportStoreFailures } from './limits/rate-limit-store-failure.ts';
import { createStabilityNotice, createStabilityPolicy } from './policy/stability.ts';
import { compileVersionNotice, createVersionNotice, createVersionSunsetEnforcement } from './policy/version-deprecation.ts';
import type { UpstreamProxy } from './proxy/create-proxy.ts';
import { STANDARD_FORWARDED } from './proxy/header-policy.ts';

/** One version of the interface as the pipeline serves it: its document, its own deprecation, the proxy to its upstream. */
export interface ServedVersion {
  contract: Contract;
  /** The whole version deprecated (config `versionDeprecation`, `versions[].deprecation`); null: current. */
  deprecation: VersionDeprecation | null;
  proxy: UpstreamProxy;
}

export interface AppDependencies {
  config: GatewayConfig;
  /** Each mounted at its document's base path, in this order. */
  versions: readonly ServedVersion[];
  keyStore: KeyStore;
  /** Where rate-limit hits are counted; each process alone when absent. */
  rateLimitStore?: LimitStore;
  hashKey: KeyHasher;
  clock: Clock;
  /** Brownouts of deprecated operations, scheduled and set by operators. */
  brownouts: BrownoutBoard;
  logger: Logger;
  metrics: GatewayMetrics;
  /** CORS, when this environment allows some origin (config `cors.allowedOrigins`), compiled by the pipeline generation; undefined when off. */
  cors: CompiledCors | undefined;
}

export function createApp(deps: AppDependencies): Express {
  const { config, clock, logger } = deps;

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('case sensitive routing', true);
  app.set('strict routing', true);

  // Stages that do not depend on the version are built once and shared by every version's stages: one
  // authentication, and one rate limiter (keyed by key id and operationId, unique across documents).
  const authenticate = createAuthenticate({
    keyStore: deps.keyStore,
    hashKey: deps.hashKey,
    environment: config.environment,
    clock,
    onRefusal: deps.metrics.authRefused,
  });
  const requireOperation = createRequireOperation();
  const rateLimit = createRateLimit({
    windowMs: config.rateLimit.windowMs,
    limits: config.rateLimit.limits[config.environment],
    onStoreError: config.rateLimit.onStoreError,
    ...(deps.rateLimitStore ? { store: deps.rateLimitStore } : {}),
    onLimited: deps.metrics.rateLimited,
    onQuotaRefused: deps.metrics.quotaRefused,
    clock,
    legacyHeaders: config.rateLimit.legacyHeaders,
    onStoreUnavailable: reportStoreFailures({
      logger,
      clock,
      count: deps.metrics.rateLimitStoreError,
      mode: config.rateLimit.mode,
      policy: config.rateLimit.onStoreError,
    }),
    onPassedUnlimited: deps.metrics.rateLimitPassed,
  });
  const validate = createValidateRequest({ maxBodyBytes: config.requests.maxBodyBytes });
  const announceStability = createStabilityNotice();
  const { cors } = deps;
  // What the gateway publishes about the interface (RFC 9727 catalog, each version's document), serialised now, once for this generation.
  const discovery = compileDiscovery({ versions: deps.versions, pages: config.deprecations, corsOrigins: cors?.allowedOrigins });

  const mounted: Array<{ basePath: string; stages: RequestHandler }> = [];
  for (const version of deps.versions) {
    const { contract } = version;
    const notices = compileDeprecationNotices({ contract, policies: config.deprecations, basePath: contract.basePath });
    const versionNotice = compileVersionNotice(contract, version.deprecation);
    const stages = inOrder([
      // A browser's preflight never carries the key: answered here, before authentication, and never sent upstream.
      ...(cors
        ? [createPreflight({ allowedOrigins: cors.allowedOrigins, contract, acceptedHeaders: [...STANDARD_FORWARDED, ...config.headers.forwardToUpstream] })]
        : []),
      // Which operation is this? Nothing is refused yet: an unauthenticated caller learns nothing.
      createMatchOperation(contract),
      // Deprecated operations (and every operation of a deprecated version) say so on every response, refusals included.
      createDeprecationNotice(notices),
      ...(versionNotice ? [createVersionNotice(versionNotice)] : []),
      // Experimental and beta operations say so on every response too.
      announceStability,
      // The version's own document, as published: answered by the gateway, without a key, after the notices above.
      ...discovery.documentAnswer(contract),
      authenticate,
      requireOperation,
      ...(versionNotice ? [createVersionSunsetEnforcement(versionNotice, clock, deps.metrics.deprecatedRefused)] : []),
      createSunsetEnforcement(notices, clock, deps.metrics.deprecatedRefused),
      // Before the sunset, brownouts: refused the same way for a while, so callers notice while they can still move.
      createBrownoutEnforcement({ notices, brownouts: deps.brownouts, clock, onRefused: deps.metrics.deprecatedRefused }),
      // What experimental and beta operations allow here: everyone, no one, or keys that opted in.
      createStabilityPolicy({
        access: config.stability[config.environment],
        environment: config.environment,
        basePath: contract.basePath,
        onRefused: deps.metrics.stabilityRefused,
      }),
      // Counted per key and operation; invalid requests count too, so they cannot be used to flood.
      rateLimit,
      validate,
      // Through the version's circuit breaker to the version's upstream; the breaker counts what the exchange reports.
      version.proxy.handler,
    ]);
    mounted.push({ basePath: contract.basePath, stages });
  }
  // Each version at its base path (the path itself, or below it), as a Router mount would match it.
  function versionAt(path: string): RequestHandler | undefined {
    for (const { basePath, stages } of mounted) {
      if (path.startsWith(basePath) && (path.length === basePath.length || path[basePath.length] === '/')) return stages;
    }
    return undefined;
  }
  const serveVersion: RequestHandler = function serveVersion(req, res, next) {
    const stages = versionAt(res.locals.gateway.path);
    if (stages === undefined) return next();
    stages(req, res, next);
  };

  // One layer of the app's router for every request: each layer it walks costs a path match, a
  // prefix trim and closures, and none of these stages needs a path of its own. With CORS on, its
  // headers come first, so that every answer, refusals included, says whether a page may read it.
  // The catalog lies outside every base path: answered there, before any version's stages, without a key.
  app.use(inOrder([...(cors ? [createCorsHeaders(cors.announce)] : []), createRequestTarget(), ...discovery.catalogAnswer, serveVersion, notFound]));
  app.use(createErrorHandler((error) => logger.error({ err: error }, 'unexpected error while handling a request')));
  return app;
}
