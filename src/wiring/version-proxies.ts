// One proxy per version of the interface, each to its own upstream: what the app mounts behind each version's router.
import type { Logger } from 'pino';
import type { ServedVersion } from '../app.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { ApiVersion } from '../contract/api-versions.ts';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { createProxy, type ProxyOptions } from '../proxy/create-proxy.ts';
import { describeUpstreamFailure } from '../proxy/upstream-failure.ts';

export interface VersionProxiesOptions {
  config: GatewayConfig;
  metrics: GatewayMetrics;
  logger: Logger;
  identityHeaders: ProxyOptions['identityHeaders'];
}

/**
 * Each version gets its own connection pool and circuit breaker, so one backend failing does not open the
 * circuit in front of another; exchange behaviour and timeouts are the same for all. The circuit gauge
 * has no version label: it reads 1 while any version's circuit is not closed.
 */
export function createVersionProxies(versions: readonly ApiVersion[], options: VersionProxiesOptions): ServedVersion[] {
  const { config, metrics, logger } = options;
  const notClosed = new Set<string>();
  return versions.map(({ contract, source }) => ({
    contract,
    deprecation: source.deprecation,
    proxy: createProxy({
      baseUrl: source.upstreamBaseUrl,
      idleTimeoutMs: config.upstream.timeoutMs,
      connectTimeoutMs: config.upstream.connectTimeoutMs,
      totalTimeoutMs: config.upstream.totalTimeoutMs,
      maxSockets: config.upstream.maxSockets,
      circuitBreaker: {
        ...config.upstream.circuitBreaker,
        onStateChange: (state) => {
          if (state === 'closed') notClosed.delete(contract.basePath);
          else notClosed.add(contract.basePath);
          metrics.upstreamCircuit(notClosed.size === 0 ? 'closed' : 'open');
        },
      },
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
