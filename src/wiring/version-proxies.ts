// One proxy per version of the interface, each to its own upstream: what the app mounts behind each version's router.
import type { ServedVersion } from '../app.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { ApiVersion } from '../contract/api-versions.ts';
import type { CircuitBreakers } from '../proxy/circuit-breakers.ts';
import { createAnswerChecks } from '../proxy/answer-check.ts';
import { createProxy, type ProxyOptions } from '../proxy/create-proxy.ts';
import type { UpstreamTls } from '../proxy/upstream-tls.ts';
import type { ShadowTraffic } from '../shadow/shadow-traffic.ts';

export interface VersionProxiesOptions {
  config: GatewayConfig;
  identityHeaders: ProxyOptions['identityHeaders'];
  /** Shared by every generation of the pipeline, so a reload keeps an open circuit open. */
  breakers: CircuitBreakers;
  /** This generation's TLS to https:// upstreams: a reload's new files make new pools. */
  upstreamTls: UpstreamTls;
  onServerCertificate: NonNullable<ProxyOptions['onServerCertificate']>;
  onConnectionRetired: NonNullable<ProxyOptions['onConnectionRetired']>;
  /** This generation's shadow traffic: each version's proxy gets a sampler for its operations (none when none is shadowed). */
  shadow: ShadowTraffic;
}

/** Where a version's requests are shadowed: `shadow.upstreamUrl` or the staging upstream for the first document, each version's own after. */
function stagingUpstream(config: GatewayConfig, index: number): string {
  if (index === 0) return config.shadow.upstreamUrl ?? config.environments.staging.upstream;
  return config.versions[index - 1]!.upstreams.staging;
}

/** Each version gets its own pool and circuit breaker, so one failing backend does not open the circuit in front of another. */
export function createVersionProxies(versions: readonly ApiVersion[], options: VersionProxiesOptions): ServedVersion[] {
  const { config } = options;
  const answerCheckFor = createAnswerChecks({
    ...config.contractResponses[config.environment],
    maxBodyBytes: config.contractResponses.maxBodyBytes,
    defaultCovers: config.contractResponses.defaultCovers,
  });
  return versions.map(({ contract, source }, index) => ({
    contract,
    deprecation: source.deprecation,
    proxy: createProxy({
      baseUrl: source.upstreamBaseUrl,
      idleTimeoutMs: config.upstream.timeoutMs,
      connectTimeoutMs: config.upstream.connectTimeoutMs,
      totalTimeoutMs: config.upstream.totalTimeoutMs,
      maxSockets: config.upstream.maxSockets,
      requestIdEcho: config.upstream.requestIdEcho,
      http2: config.upstream.http2,
      tls: options.upstreamTls.connect,
      onServerCertificate: options.onServerCertificate,
      onConnectionRetired: options.onConnectionRetired,
      breaker: options.breakers.for(contract.basePath, config.upstream.circuitBreaker),
      identityHeaders: options.identityHeaders,
      operations: contract.operations,
      headers: config.headers,
      answerCheckFor,
      shadow: options.shadow.samplerFor(contract.operations, source.upstreamBaseUrl, stagingUpstream(config, index)),
    }),
  }));
}
