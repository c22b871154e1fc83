// The admin API's document declares what the admin API answers: each (operation, status) is provoked over HTTP and checked against it.
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import { createRedisShadowReport } from '../../src/shadow/report-store.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { ADMIN_TOKEN, startAdminGateway, type AdminGateway } from '../helpers/admin-api.ts';
import { TEST_NOW } from '../helpers/build-test-app.ts';
import { describeContract, readInterfaceDocument, type ProvokedCase } from '../helpers/openapi-contract.ts';
import { rawRequest, type RawResponse } from '../helpers/raw-request.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const document = readInterfaceDocument(new URL('../../config/admin.openapi.yaml', import.meta.url));
const PEPPER = 'admin-contract-test-pepper-1';
const MAX_FAILURES = 3;

let backend: SampleBackend;
let redis: PrivateRedis;
/** Redis is killed once the gateway is up: every operation fails 503. */
let lostRedis: PrivateRedis;
let served: AdminGateway;
let redisDown: AdminGateway;
/** A key that exists and one revoked, created before the cases run. */
let keyId: string;
let revokedId: string;

beforeAll(async () => {
  backend = await startPetStore();
  [redis, lostRedis] = await Promise.all([startRedis(), startRedis()]);
  const start = (redisUrl: string) =>
    startAdminGateway({
      redisUrl,
      upstreamUrl: backend.baseUrl,
      pepper: PEPPER,
      clock: fixedClock(TEST_NOW),
      overrides: { adminApi: { maxFailedAuthPerMinute: MAX_FAILURES } },
    });
  [served, redisDown] = await Promise.all([start(redis.url), start(lostRedis.url)]);
  await lostRedis.kill();
  keyId = ((await send(served, 'POST', '/admin/keys', { body: '{"consumer":"contract"}' })).body.match(/"id":"([^"]+)"/) ?? [])[1]!;
  revokedId = ((await send(served, 'POST', '/admin/keys', { body: '{"consumer":"revoked"}' })).body.match(/"id":"([^"]+)"/) ?? [])[1]!;
  await send(served, 'DELETE', `/admin/keys/${revokedId}`);
  // The source address of the 429 cases uses up its failures.
  for (let attempt = 0; attempt < MAX_FAILURES; attempt++) await send(served, 'GET', '/admin/keys', { token: null, from: '127.0.0.9' });
});
afterAll(async () => {
  await Promise.all([served?.close(), redisDown?.close()]);
  await Promise.all([backend?.close(), redis?.stop(), lostRedis?.stop()]);
});

interface SendOptions {
  /** The admin token; ADMIN_TOKEN when absent, no Authorization when null. */
  token?: string | null;
  body?: string;
  contentType?: string;
  from?: string;
}

function send(target: AdminGateway, method: string, path: string, options: SendOptions = {}): Promise<RawResponse> {
  const token = options.token === undefined ? ADMIN_TOKEN : options.token;
  const headers: Record<string, string> = token === null ? {} : { Authorization: `Bearer ${token}` };
  if (options.body !== undefined) headers['Content-Type'] = options.contentType ?? 'application/json';
  return rawRequest(target.adminPort, {
    method,
    path,
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
    ...(options.from === undefined ? {} : { localAddress: options.from }),
  });
}

/** Runs `send` while the served Redis lists a key, the oldest, whose record is missing. */
async function withDamagedKey(send: () => Promise<RawResponse>): Promise<RawResponse> {
  const prefix = 'petstore-gateway:{keys}';
  const id = 'key_damaged00000';
  await redis.client
    .multi()
    .sadd(`${prefix}:key-ids`, id)
    .zadd(`${prefix}:key-order`, 0, `1970-01-01T00:00:00.000Z|${id}`)
    .set(`${prefix}:key-id:${id}`, 'f'.repeat(64))
    .exec();
  try {
    return await send();
  } finally {
    await redis.client.multi().srem(`${prefix}:key-ids`, id).zrem(`${prefix}:key-order`, `1970-01-01T00:00:00.000Z|${id}`).del(`${prefix}:key-id:${id}`).exec();
  }
}

type Call = (target: AdminGateway, options?: SendOptions) => Promise<RawResponse>;

type OperationId =
  | 'listKeys'
  | 'createKey'
  | 'getKey'
  | 'revokeKey'
  | 'rotateKey'
  | 'setKeyRateLimit'
  | 'setKeyOptIn'
  | 'setKeyQuota'
  | 'listBrownouts'
  | 'startBrownout'
  | 'stopBrownout'
  | 'getDeprecationReport'
  | 'getUsage'
  | 'getShadowReport';

/** Each operation as a valid request, on a target, with options laid over it. */
const OPERATIONS: Readonly<Record<OperationId, Call>> = {
  listKeys: (target, options) => send(target, 'GET', '/admin/keys', options),
  createKey: (target, options) => send(target, 'POST', '/admin/keys', { body: '{"consumer":"acme","environments":["staging"]}', ...options }),
  getKey: (target, options) => send(target, 'GET', `/admin/keys/${keyId}`, options),
  revokeKey: (target, options) => send(target, 'DELETE', `/admin/keys/${revokedId}`, options),
  rotateKey: (target, options) => send(target, 'POST', `/admin/keys/${keyId}/rotate`, { body: '{"overlapSeconds":60}', ...options }),
  setKeyRateLimit: (target, options) => send(target, 'PUT', `/admin/keys/${keyId}/rate-limit`, { body: '{"perMinute":100}', ...options }),
  setKeyOptIn: (target, options) => send(target, 'PUT', `/admin/keys/${keyId}/opt-in`, { body: '{"stabilities":["beta"]}', ...options }),
  setKeyQuota: (target, options) => send(target, 'PUT', `/admin/keys/${keyId}/quota`, { body: '{"perDay":1000,"perMonth":null}', ...options }),
  listBrownouts: (target, options) => send(target, 'GET', '/admin/brownouts', options),
  startBrownout: (target, options) => send(target, 'POST', '/admin/brownouts/getPet', { body: '{"minutes":1}', ...options }),
  stopBrownout: (target, options) => send(target, 'DELETE', '/admin/brownouts/getPet', options),
  getDeprecationReport: (target, options) => send(target, 'GET', '/admin/deprecations/report', options),
  getUsage: (target, options) => send(target, 'GET', '/admin/usage?from=2026-11-01&to=2026-11-30&granularity=month', options),
  getShadowReport: (target, options) => send(target, 'GET', '/admin/shadow/report?operation=getPetById', options),
};

/** A comparison that differed, with noise, as a replica writes it: the report the 200 case reads is not empty. */
async function withShadowComparisons(then: () => Promise<RawResponse>): Promise<RawResponse> {
  const report = createRedisShadowReport(redis.client, {
    keyPrefix: 'petstore-gateway:',
    clock: fixedClock(TEST_NOW),
    retentionDays: 30,
    flushIntervalMs: 60_000,
  });
  const at = TEST_NOW - 60_000;
  report.record({
    operation: 'getPetById',
    result: 'differ',
    differences: [{ pointer: '/name', kind: 'missing' }],
    noise: [{ pointer: '/at', kind: 'value' }],
    at,
  });
  report.noteNoise({ operation: 'getPetById', pointer: '/at', kind: 'value', at });
  await report.close();
  return then();
}

/** Every operation answers these three the same way. Each 401 comes from an address of its own: its failure counts against it. */
const EVERY_OPERATION: ProvokedCase[] = Object.entries(OPERATIONS).flatMap(([operation, call], index) => [
  { operation, declared: 401, why: 'no admin token', send: () => call(served, { token: null, from: `127.0.1.${index + 1}` }) },
  { operation, declared: 429, why: 'an address that failed too often', send: () => call(served, { from: '127.0.0.9' }) },
  { operation, declared: 503, why: 'Redis is down', send: () => call(redisDown) },
]);

const { createKey, getKey, revokeKey, rotateKey, setKeyRateLimit, setKeyOptIn, setKeyQuota, startBrownout, stopBrownout } = OPERATIONS;

/** In order: the brownout is started before it is stopped, and stopped before stopping again is refused. */
const CASES: readonly ProvokedCase[] = [
  { operation: 'listKeys', declared: 200, why: 'a page of the keys, with the next one’s Link', send: () => send(served, 'GET', '/admin/keys?limit=1') },
  { operation: 'listKeys', declared: 400, why: 'a cursor the API did not give', send: () => send(served, 'GET', '/admin/keys?cursor=bm90LWEtY3Vyc29y') },
  { operation: 'listKeys', declared: 500, why: 'a listed key without its record', send: () => withDamagedKey(() => OPERATIONS.listKeys(served)) },
  { operation: 'createKey', declared: 201, why: 'a valid key', send: () => createKey(served) },
  { operation: 'createKey', declared: 400, why: 'an unknown field', send: () => createKey(served, { body: '{"consumer":"x","owner":"y"}' }) },
  { operation: 'createKey', declared: 415, why: 'a form body', send: () => createKey(served, { contentType: 'application/x-www-form-urlencoded' }) },
  { operation: 'getKey', declared: 200, why: 'a key that exists', send: () => getKey(served) },
  { operation: 'getKey', declared: 404, why: 'an unknown id', send: () => send(served, 'GET', '/admin/keys/key_unknown00000') },
  { operation: 'revokeKey', declared: 204, why: 'a revoked key, again', send: () => revokeKey(served) },
  { operation: 'revokeKey', declared: 404, why: 'an unknown id', send: () => send(served, 'DELETE', '/admin/keys/key_unknown00000') },
  { operation: 'rotateKey', declared: 201, why: 'a key that exists', send: () => rotateKey(served) },
  { operation: 'rotateKey', declared: 400, why: 'a negative overlap', send: () => rotateKey(served, { body: '{"overlapSeconds":-1}' }) },
  { operation: 'rotateKey', declared: 404, why: 'an unknown id', send: () => send(served, 'POST', '/admin/keys/key_unknown00000/rotate') },
  { operation: 'rotateKey', declared: 409, why: 'a revoked key', send: () => send(served, 'POST', `/admin/keys/${revokedId}/rotate`) },
  { operation: 'rotateKey', declared: 415, why: 'a text body', send: () => rotateKey(served, { contentType: 'text/plain' }) },
  { operation: 'setKeyRateLimit', declared: 200, why: 'a limit', send: () => setKeyRateLimit(served) },
  { operation: 'setKeyRateLimit', declared: 400, why: 'no perMinute', send: () => setKeyRateLimit(served, { body: '{}' }) },
  {
    operation: 'setKeyRateLimit',
    declared: 404,
    why: 'an unknown id',
    send: () => send(served, 'PUT', '/admin/keys/key_unknown00000/rate-limit', { body: '{"perMinute":1}' }),
  },
  { operation: 'setKeyRateLimit', declared: 415, why: 'a text body', send: () => setKeyRateLimit(served, { contentType: 'text/plain' }) },
  { operation: 'setKeyOptIn', declared: 200, why: 'a marker', send: () => setKeyOptIn(served) },
  { operation: 'setKeyOptIn', declared: 400, why: 'an unknown marker', send: () => setKeyOptIn(served, { body: '{"stabilities":["alpha"]}' }) },
  {
    operation: 'setKeyOptIn',
    declared: 404,
    why: 'an unknown id',
    send: () => send(served, 'PUT', '/admin/keys/key_unknown00000/opt-in', { body: '{"stabilities":[]}' }),
  },
  { operation: 'setKeyOptIn', declared: 415, why: 'a text body', send: () => setKeyOptIn(served, { contentType: 'text/plain' }) },
  { operation: 'setKeyQuota', declared: 200, why: 'a daily quota set, the monthly removed', send: () => setKeyQuota(served) },
  { operation: 'setKeyQuota', declared: 400, why: 'neither quota named', send: () => setKeyQuota(served, { body: '{}' }) },
  {
    operation: 'setKeyQuota',
    declared: 404,
    why: 'an unknown id',
    send: () => send(served, 'PUT', '/admin/keys/key_unknown00000/quota', { body: '{"perDay":1}' }),
  },
  { operation: 'setKeyQuota', declared: 415, why: 'a text body', send: () => setKeyQuota(served, { contentType: 'text/plain' }) },
  { operation: 'startBrownout', declared: 201, why: 'a deprecated operation', send: () => startBrownout(served) },
  { operation: 'listBrownouts', declared: 200, why: 'the brownout started', send: () => OPERATIONS.listBrownouts(served) },
  { operation: 'startBrownout', declared: 400, why: 'no minutes', send: () => startBrownout(served, { body: '{}' }) },
  {
    operation: 'startBrownout',
    declared: 404,
    why: 'an operation not deprecated',
    send: () => send(served, 'POST', '/admin/brownouts/listPets', { body: '{"minutes":1}' }),
  },
  { operation: 'startBrownout', declared: 415, why: 'a text body', send: () => startBrownout(served, { contentType: 'text/plain' }) },
  { operation: 'stopBrownout', declared: 204, why: 'the brownout in progress', send: () => stopBrownout(served) },
  { operation: 'stopBrownout', declared: 404, why: 'an operation not deprecated', send: () => send(served, 'DELETE', '/admin/brownouts/listPets') },
  { operation: 'stopBrownout', declared: 409, why: 'no brownout in progress', send: () => stopBrownout(served) },
  { operation: 'getDeprecationReport', declared: 200, why: 'the report', send: () => OPERATIONS.getDeprecationReport(served) },
  { operation: 'getUsage', declared: 200, why: 'a month of usage, as JSON', send: () => OPERATIONS.getUsage(served) },
  { operation: 'getUsage', declared: 400, why: 'from after to', send: () => send(served, 'GET', '/admin/usage?from=2026-11-30&to=2026-11-01') },
  { operation: 'getShadowReport', declared: 200, why: 'a day of comparisons', send: () => withShadowComparisons(() => OPERATIONS.getShadowReport(served)) },
  { operation: 'getShadowReport', declared: 400, why: 'from after to', send: () => send(served, 'GET', '/admin/shadow/report?from=2026-11-30&to=2026-11-01') },
  ...EVERY_OPERATION,
];

/** Sends a reload while the token file holds a short token (refused: 409), then puts the file back. */
async function refusedReload(): Promise<RawResponse> {
  const tokens = readFileSync(served.tokenFile, 'utf8');
  writeFileSync(served.tokenFile, 'short-token\n');
  try {
    return await reloadConfig(served);
  } finally {
    writeFileSync(served.tokenFile, tokens);
  }
}

/** A reload needs no Redis, so it has no 503: it is not one of OPERATIONS. */
const reloadConfig: Call = (target, options) => send(target, 'POST', '/admin/config/reload', options);
const RELOAD_CASES: ProvokedCase[] = [
  { operation: 'reloadConfig', declared: 200, why: 'the same configuration', send: () => reloadConfig(served) },
  { operation: 'reloadConfig', declared: 409, why: 'a token file the reload refuses', send: refusedReload },
  { operation: 'reloadConfig', declared: 401, why: 'no admin token', send: () => reloadConfig(served, { token: null, from: '127.0.2.1' }) },
  { operation: 'reloadConfig', declared: 429, why: 'an address that failed too often', send: () => reloadConfig(served, { from: '127.0.0.9' }) },
];

describeContract('the admin API', document, [...CASES, ...RELOAD_CASES]);
