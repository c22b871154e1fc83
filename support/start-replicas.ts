// Gateway processes (npm start's entry point) on one private Redis in front of the sample pet store: replicas as production runs them.
import type { SampleBackend } from '../src/demo/sample-backend.ts';
import { startGatewayProcess, waitUntilReady, type GatewayProcess } from './start-gateway-process.ts';
import { startRedis, type PrivateRedis } from './start-redis.ts';
import { startPetStore } from './start-upstream.ts';

export interface Replicas {
  redis: PrivateRedis;
  backend: SampleBackend;
  replicas: GatewayProcess[];
  /** The replicas' environment: the CLIs run with it reach the same Redis with the same pepper. */
  env: Record<string, string>;
  /** Stops the replicas, then the pet store, then Redis. */
  stop(): Promise<void>;
}

/**
 * Starts `count` replicas at once on `env` laid over REDIS_URL, UPSTREAM_URL and GATEWAY_ENVIRONMENT=production,
 * and resolves when every one of them is ready.
 */
export async function startReplicas(count: number, env: Record<string, string>): Promise<Replicas> {
  const redis = await startRedis();
  const backend = await startPetStore();
  const replicaEnv = { REDIS_URL: redis.url, UPSTREAM_URL: backend.baseUrl, GATEWAY_ENVIRONMENT: 'production', ...env };
  const started = await Promise.allSettled(Array.from({ length: count }, () => startGatewayProcess(replicaEnv)));
  const replicas = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  // A set-up that fails leaves nothing running: the caller gets no handle to stop what did start.
  const abandon = async (error: unknown): Promise<never> => {
    await Promise.all(replicas.map((replica) => replica.stop('SIGKILL')));
    await backend.close();
    await redis.stop();
    throw error;
  };
  const failed = started.find((outcome) => outcome.status === 'rejected');
  if (failed !== undefined) await abandon(failed.reason);
  try {
    for (const replica of replicas) await waitUntilReady(replica);
  } catch (error) {
    await abandon(error);
  }
  return {
    redis,
    backend,
    replicas,
    env: replicaEnv,
    async stop() {
      await Promise.all(replicas.map((replica) => replica.stop()));
      await backend.close();
      await redis.stop();
    },
  };
}
