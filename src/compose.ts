// Wires a gateway from its configuration and the parts that differ between production and the demo.
import { connect } from 'node:net';
import type { Logger } from 'pino';
import type { ReadinessCheck } from './admin/admin-app.ts';
import { createApp } from './app.ts';
import type { KeyHasher } from './auth/key-hash.ts';
import type { KeyStore } from './auth/key-store.ts';
import type { GatewayConfig } from './config/schema.ts';
import { loadContract } from './contract/compile-contract.ts';
import type { Clock } from './http/clock.ts';
import { createProxy } from './proxy/create-proxy.ts';
import { startGateway, type RunningGateway } from './server.ts';

export interface ComposeOptions {
  config: GatewayConfig;
  logger: Logger;
  clock: Clock;
  keyStore: KeyStore;
  hashKey: KeyHasher;
  /** Readiness checks of the key store and other dependencies. */
  checks?: readonly ReadinessCheck[];
  onClosed?: () => Promise<void> | void;
}

/** Whether a TCP connection to the upstream opens: reported by /readyz, not critical (see README). */
function upstreamReachable(baseUrl: string, timeoutMs = 1000): Promise<boolean> {
  const url = new URL(baseUrl);
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname, port, timeout: timeoutMs });
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => finish(true));
    socket.once('timeout', () => finish(false));
    socket.once('error', () => finish(false));
  });
}

export async function composeGateway(options: ComposeOptions): Promise<RunningGateway> {
  const { config, logger } = options;
  const contract = loadContract(config.contractPath);
  const proxy = createProxy({
    baseUrl: config.upstreamBaseUrl,
    timeoutMs: config.upstream.timeoutMs,
    maxSockets: config.upstream.maxSockets,
    maxFreeSockets: config.upstream.maxFreeSockets,
    onFailure: (kind, _req, error) => logger.warn({ kind, err: error }, 'upstream exchange failed'),
  });
  const app = createApp({
    config,
    contract,
    keyStore: options.keyStore,
    hashKey: options.hashKey,
    clock: options.clock,
    logger,
    proxy,
  });
  return startGateway({
    app,
    config,
    logger,
    admin: {
      checks: [
        ...(options.checks ?? []),
        { name: 'upstream', critical: false, check: () => upstreamReachable(config.upstreamBaseUrl) },
      ],
    },
    onClosed: async () => {
      proxy.close();
      await options.onClosed?.();
    },
  });
}
