// npm run demo: the sample backend and the gateway in front of it, with an in-memory key store.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKeyHasher } from '../auth/key-hash.ts';
import { generateApiKey, generateKeyId } from '../auth/api-key.ts';
import { MemoryKeyStore } from '../auth/memory-key-store.ts';
import { composeGateway } from '../wiring/compose.ts';
import { ConfigError, loadConfig } from '../config/load-config.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { writeSigningKeyFile } from '../identity/generate-key.ts';
import { systemClock } from '../time/clock.ts';
import { createLogger } from '../observability/logger.ts';
import { startupFailureMessage } from '../startup-failure.ts';
import { startSampleBackend, type SampleBackendIdentity } from './sample-backend.ts';

// The gateway signs who called with a fresh key; the sample backend verifies it against the gateway's JWKS.
const identity = await prepareDemoCallerIdentity();
const { config, backend, gateway, apiKey } = await startDemo(identity).catch(async (error: unknown) => {
  await identity.cleanup();
  process.stderr.write(`demo: could not start: ${startupFailureMessage(error)}\n`);
  return process.exit(1);
});

const base = `http://localhost:${gateway.port}/v1`;
process.stdout.write(`
Pet store gateway demo
  sample backend  ${backend.baseUrl}
  gateway         ${base}   (environment: ${config.environment})
  admin           http://localhost:${gateway.adminPort}/healthz  /readyz  /metrics  /.well-known/jwks.json
  caller identity the backend verifies a token signed by the gateway (kid ${identity.kid}); see its "pet created" lines
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

/** The sample backend, then the gateway in front of it; a port in use rejects naming its variable. */
async function startDemo(identity: DemoCallerIdentity) {
  const backendPort = Number(process.env.DEMO_BACKEND_PORT || 4010);
  if (!Number.isInteger(backendPort) || backendPort < 0 || backendPort > 65_535) {
    throw new ConfigError(
      `invalid environment variable DEMO_BACKEND_PORT: must be an integer port number (0 to 65535), not ${JSON.stringify(process.env.DEMO_BACKEND_PORT)}`,
    );
  }
  const config = loadConfig(
    { ...process.env, UPSTREAM_URL: `http://127.0.0.1:${backendPort}/v1` },
    { environment: 'staging', shutdown: { drainDelayMs: 0 }, upstreamIdentity: { keyFile: identity.keyFile } },
  );
  const backend = await startSampleBackend({
    port: backendPort,
    portSetting: 'DEMO_BACKEND_PORT',
    identity: identity.backendIdentity(config),
    log: (line) => process.stdout.write(`${JSON.stringify({ service: 'sample-backend', ...line })}\n`),
  });
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
    onClosed: async () => {
      await backend.close();
      await identity.cleanup();
    },
  });
  return { config, backend, gateway, apiKey };
}

/** Signed caller identity for the demo: a key the gateway signs with, and the check the sample backend makes. */
export interface DemoCallerIdentity {
  /** The new Ed25519 key: the gateway's upstreamIdentity.keyFile. */
  keyFile: string;
  kid: string;
  /** The sample backend's `identity` option for a gateway with this configuration (its admin port, issuer, audience). */
  backendIdentity(config: Pick<GatewayConfig, 'listen' | 'upstreamIdentity'>): SampleBackendIdentity;
  /** Removes the key and its temporary directory. */
  cleanup(): Promise<void>;
}

/** Writes a fresh signing key into a private temporary directory (0700, the key 0600). */
export async function prepareDemoCallerIdentity(): Promise<DemoCallerIdentity> {
  const dir = await mkdtemp(join(tmpdir(), 'petstore-demo-identity-'));
  const keyFile = join(dir, 'identity-key.pem');
  const key = await writeSigningKeyFile(keyFile, 'ed25519');
  return {
    keyFile,
    kid: key.kid,
    backendIdentity: (config) => ({
      jwksUrl: `http://127.0.0.1:${config.listen.adminPort}/.well-known/jwks.json`,
      issuer: config.upstreamIdentity.issuer,
      audience: config.upstreamIdentity.audience,
    }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
