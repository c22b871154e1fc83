// The gateway under test: the real composition root on the run's private Redis, configured tight for the harness.
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { KeyAdmin } from '../../src/auth/key-admin.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { GatewayConfig } from '../../src/config/schema.ts';
import { createRedisClient } from '../../src/redis/connect.ts';
import { systemClock } from '../../src/time/clock.ts';
import { composeRedisGateway } from '../../src/wiring/compose.ts';
import { startRedis } from '../../support/start-redis.ts';
import { scaled } from '../../support/time-scale.ts';
import { HARNESS_ORIGIN } from './client-requests.ts';
import { type HarnessDocument, writeListPetsWithoutDefault } from './documents.ts';
import type { GatewaySettings } from './script.ts';

/** The pepper the run's keys are hashed with: a gateway process of the run (the signal cases) is given it too. */
export const HARNESS_PEPPER = 'edge-harness-pepper-0001';
const hashKey = createKeyHasher(HARNESS_PEPPER);

/** Calls a day the third client's key is allowed, across the cases of a run. */
const QUOTA_OF_THE_THIRD_KEY = 5;

/** What a whole run shares: one private Redis and the keys made on it once. */
export interface HarnessEnvironment {
  redisUrl: string;
  keys: string[];
  /** Where each interface document a case may serve is; the project's is the configuration's own. */
  documents: Readonly<Record<Exclude<HarnessDocument, 'v1'>, string>>;
  close(): Promise<void>;
}

/** `listenerEnv`: the settings that make the public listener HTTPS (EdgeTransport.env()); none for plain HTTP. */
export function harnessConfig(
  redisUrl: string,
  upstreamUrl: string,
  settings: GatewaySettings,
  documents?: HarnessEnvironment['documents'],
  listenerEnv: Record<string, string> = {},
): GatewayConfig {
  const document = settings.document === undefined || settings.document === 'v1' ? undefined : documents?.[settings.document];
  if (settings.document !== undefined && settings.document !== 'v1' && document === undefined) throw new Error(`no ${settings.document} document`);
  return loadConfig(
    { PORT: '0', ADMIN_PORT: '0', REDIS_URL: redisUrl, UPSTREAM_URL: upstreamUrl, GATEWAY_ENVIRONMENT: 'production', ...listenerEnv },
    {
      listen: { host: '127.0.0.1', adminHost: '127.0.0.1' },
      upstream: {
        maxSockets: settings.maxSockets,
        timeoutMs: settings.timeoutMs,
        totalTimeoutMs: settings.totalTimeoutMs,
        connectTimeoutMs: 500,
        // High enough not to dominate; a 503 it causes is still a valid answer.
        circuitBreaker: { failureThreshold: 50, openMs: 1000 },
        ...(settings.requestIdEcho === undefined ? {} : { requestIdEcho: settings.requestIdEcho }),
      },
      rateLimit: { limits: { production: { default: 10_000_000, createPet: 10_000_000 } } },
      // A key's lookup and count go to Redis: on a busy machine a round trip past the default 500 ms would answer 503.
      redis: { commandTimeoutMs: scaled(500) },
      cors: { allowedOrigins: { production: [HARNESS_ORIGIN] } },
      shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 },
      // Report checks every answer (sample 1), so that each one's check runs beside its relay.
      ...(settings.contractMode === undefined ? {} : { contractResponses: { production: { mode: settings.contractMode, sample: 1 } } }),
      ...(document === undefined ? {} : { contract: document }),
      // Production is never asked twice (noiseSample 0): the upstream's scripts answer each client request once.
      ...(settings.shadow === true
        ? { shadow: { sample: { default: 1, createPet: 1 }, upstreamUrl: 'http://127.0.0.1:1/v1', noiseSample: 0, timeoutMs: 500 } }
        : {}),
    },
  );
}

export async function startEnvironment(keyCount: number): Promise<HarnessEnvironment> {
  const redis = await startRedis();
  const config = harnessConfig(redis.url, 'http://127.0.0.1:9/v1', { maxSockets: 1, timeoutMs: 300, totalTimeoutMs: 1500 });
  const client = createRedisClient(config.redis, { role: 'subscriber', name: 'edge-harness-keys' });
  const admin = new KeyAdmin(client, { keyPrefix: config.redis.keyPrefix, hashKey, clock: systemClock });
  const keys: string[] = [];
  // The third client's key has a small daily quota: past its first calls of a run, its requests meet the quota's
  // refusal (429 quota_exceeded, answered after the window's count), pipelined or not.
  const quotaFor = (i: number) => (i === 2 ? { quotaPerDay: QUOTA_OF_THE_THIRD_KEY } : {});
  for (let i = 0; i < keyCount; i++) keys.push((await admin.create({ consumer: `edge-client-${i}`, environments: ['production'], ...quotaFor(i) })).key);
  client.disconnect();
  const withoutDefault = writeListPetsWithoutDefault();
  return {
    redisUrl: redis.url,
    keys,
    documents: { 'listPets-without-default': withoutDefault.path },
    close: async () => {
      withoutDefault.remove();
      await redis.stop();
    },
  };
}

export interface CaseGateway {
  port: number;
  /** What the gateway logged as an error of its own (an `unexpected error...` line, whose request was answered 500 or to no one). */
  unexpected(): string[];
  /** The in-flight gauge once it reads 0, or its last reading when it does not within `deadlineMs` (a hang). */
  settledInFlight(deadlineMs: number): Promise<number | undefined>;
  close(): Promise<void>;
}

async function inFlight(adminPort: number): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const match = /^petstore_gateway_in_flight_requests\{[^}]*\} (\d+)$/m.exec(text);
  return match ? Number(match[1]) : undefined;
}

export async function startCaseGateway(config: GatewayConfig): Promise<CaseGateway> {
  // Error lines only: a 500 whose client had left is seen nowhere else (no answer reaches a client).
  const unexpected: string[] = [];
  const errors = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.includes('"msg":"unexpected error')) unexpected.push(line);
      done();
    },
  });
  const running = await composeRedisGateway({ config, logger: pino({ level: 'error' }, errors), clock: systemClock, hashKey });
  // Ready once the key store's Redis connection is: a request before that would be refused 503.
  const readyBy = Date.now() + 15_000;
  while ((await fetch(`http://127.0.0.1:${running.adminPort}/readyz`)).status !== 200) {
    if (Date.now() > readyBy) throw new Error('the harness gateway did not become ready');
    await sleep(10);
  }
  return {
    port: running.port,
    unexpected: () => unexpected,
    async settledInFlight(deadlineMs) {
      const by = Date.now() + deadlineMs;
      let last = await inFlight(running.adminPort);
      while (last !== 0 && Date.now() < by) {
        await sleep(20);
        last = await inFlight(running.adminPort);
      }
      return last;
    },
    close: () => running.shutdown('edge case over'),
  };
}
