// npm run demo: the sample backend and the gateway in front of it, with an in-memory key store.
import { createKeyHasher } from '../auth/key-hash.ts';
import { generateApiKey, generateKeyId } from '../auth/api-key.ts';
import { MemoryKeyStore } from '../auth/memory-key-store.ts';
import { composeGateway } from '../compose.ts';
import { loadConfig } from '../config/load-config.ts';
import { systemClock } from '../http/clock.ts';
import { createLogger } from '../observability/logger.ts';
import { startSampleBackend } from './sample-backend.ts';

const backend = await startSampleBackend({ port: Number(process.env.DEMO_BACKEND_PORT ?? 4010) });
const config = loadConfig(
  { ...process.env, UPSTREAM_URL: backend.baseUrl },
  { environment: 'staging', shutdown: { drainDelayMs: 0 } },
);
const logger = createLogger(config.logging.level);
const hashKey = createKeyHasher(undefined);
const keyStore = new MemoryKeyStore();
const apiKey = generateApiKey(['staging']);
keyStore.add(hashKey(apiKey), {
  id: generateKeyId(),
  consumer: 'demo',
  environments: ['staging'],
  createdAt: new Date().toISOString(),
  revoked: false,
});

const gateway = await composeGateway({
  config,
  logger,
  clock: systemClock,
  hashKey,
  stores: () => ({ keyStore, checks: [] }),
  onClosed: () => backend.close(),
});

const base = `http://localhost:${gateway.port}/v1`;
process.stdout.write(`
Pet store gateway demo
  sample backend  ${backend.baseUrl}
  gateway         ${base}   (environment: ${config.environment})
  admin           http://localhost:${gateway.adminPort}/healthz  /readyz  /metrics
  demo API key    ${apiKey}

Try it:
  curl -s -H 'Authorization: Bearer ${apiKey}' '${base}/pets?limit=2&status=available'
  curl -s -H 'Authorization: Bearer ${apiKey}' -H 'Content-Type: application/json' -d '{"name":"Nibbles","categoryId":4,"status":"available"}' ${base}/pets
  curl -si -H 'Authorization: Bearer ${apiKey}' ${base}/pets/1

Ctrl-C stops both.

`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    gateway.shutdown(signal).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
