// One proxy per version of the interface, each to its own upstream: what the app mounts behind each version's router.
import type { Logger } from 'pino';
import type { ServedVersion } from '../app.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { ApiVersion } from '../contract/api-versions.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { CircuitBreakers } from '../proxy/circuit-breakers.ts';
import { createProxy, type ProxyOptions } from '../proxy/create-proxy.ts';
import { describeUpstreamFailure } from '../proxy/upstream-failure.ts';

export interface VersionProxiesOptions {
  config: GatewayConfig;
  metrics: GatewayMetrics;
  logger: Logger;
  identityHeaders: ProxyOptions['identityHeaders'];
  /** Shared by every generation of the pipeline, so a reload keeps an open circuit open. */
  breakers: CircuitBreakers;
}

/**
 * Each version gets its own connection pool and circuit breaker, so one backend failing does not open the
 * circuit in front of another; exchange behaviour and timeouts are the same for all. The circuit gauge
 * has no version label: it reads 1 while any version's circuit is not closed (see CircuitBreakers).
 */
export function createVersionProxies(versions: readonly ApiVersion[], options: VersionProxiesOptions): ServedVersion[] {
  const { config, metrics, logger } = options;
  return versions.map(({ contract, source }) => ({
    contract,
    deprecation: source.deprecation,
    proxy: createProxy({
      baseUrl: source.upstreamBaseUrl,
      idleTimeoutMs: config.upstream.timeoutMs,
      connectTimeoutMs: config.upstream.connectTimeoutMs,
      totalTimeoutMs: config.upstream.totalTimeoutMs,
      maxSockets: config.upstream.maxSockets,
      breaker: options.breakers.for(contract.basePath, config.upstream.circuitBreaker),
      identityHeaders: options.identityHeaders,
      operations: contract.operations,
      headers: config.headers,
      onHeadersDropped: metrics.upstreamHeadersDropped,
      onRefusedIdentity: (operation, upstreamStatus) => {
        metrics.upstreamRefusedIdentity(operation, upstreamStatus);
        // The backend refused the gateway itself (its identity token, or the backend's setup): an operator's problem.
        logger.warn({ operation, upstreamStatus }, 'the upstream refused the gateway\'s identity');
      },
      onFailure: (kind, operation, error) => {
        metrics.upstreamFailed(operation, kind);
        // A decided refusal, not a bug: no stack, and never the raw bytes a parser error carries.
        logger.warn({ operation, upstreamFailure: describeUpstreamFailure(error) }, 'upstream exchange failed');
      },
    }),
  }));
}
