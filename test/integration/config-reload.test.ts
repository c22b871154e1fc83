// A configuration reload (SIGHUP) in process: new requests meet the new policies, a bad file changes nothing, keys rotate without a restart.
import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeProtectedHeader } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeSigningKeyFile } from '../../src/identity/generate-key.ts';
import { loadUpstreamIdentity } from '../../src/identity/upstream-identity.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { ADMIN_TOKEN, removeTokenFile, tokenFile } from '../helpers/admin-api.ts';
import { buildTestGateway, TEST_NOW, type TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { sendRaw, startRecordingUpstream, type RecordedRequest, type RecordingUpstream } from '../helpers/raw-socket.ts';
import { waitFor } from '../../support/start-gateway-process.ts';

let upstream: RecordingUpstream;
/** Each test's own answer; by default 200 `[]` at once. */
let answer: (req: RecordedRequest, res: ServerResponse) => void;
const answerAtOnce = (_req: RecordedRequest, res: ServerResponse) =>
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('[]');

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => answer(req, res));
});
afterAll(async () => upstream.close());

let gateway: TestGateway | undefined;
let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
  answer = answerAtOnce;
});
answer = answerAtOnce;

/** A listening test gateway whose reload reads `next()`. */
async function reloadable(
  next: () => Record<string, unknown>,
  start: Record<string, unknown> = {},
): Promise<{ gateway: TestGateway; port: number; adminPort: number }> {
  gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { PORT: '0', ADMIN_PORT: '0' }, overrides: start, reloadOverrides: next });
  const running = await gateway.listen();
  stop = () => running.shutdown('test over');
  return { gateway, port: running.port, adminPort: running.adminPort };
}

function get(port: number, key: string, target = '/v1/pets'): Promise<number[]> {
  return sendRaw(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`, { responses: 1 }).then((answer) => answer.statuses);
}

/** A 33-byte createPet body. */
function createPet(port: number, key: string): Promise<number[]> {
  const body = '{"name":"Nibbles","categoryId":4}';
  const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
  return sendRaw(port, head + body, { responses: 1 }).then((answer) => answer.statuses);
}

async function reloads(gateway: TestGateway, result: 'success' | 'failure'): Promise<number | undefined> {
  return parseExposition(await gateway.scrape()).get(seriesKey('petstore_gateway_config_reloads_total', { result, environment: 'production' }));
}

describe('a configuration reload', () => {
  it('gives new requests the new rate limits', async () => {
    let overrides: Record<string, unknown> = {};
    const { gateway, port } = await reloadable(() => overrides);
    const key = gateway.addKey();
    expect(await get(port, key)).toEqual([200]);
    overrides = { rateLimit: { limits: { production: { default: 2 }, staging: { default: 2 } } } };
    expect(await gateway.reload()).toMatchObject({ result: 'success', needRestart: [] });
    const fresh = gateway.addKey();
    expect([...(await get(port, fresh)), ...(await get(port, fresh)), ...(await get(port, fresh))]).toEqual([200, 200, 429]);
    expect(await reloads(gateway, 'success')).toBe(1);
    expect(gateway.logs.find((line) => line.msg === 'configuration reloaded')).toMatchObject({
      level: 30,
      configHash: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
  });

  it('makes new requests with the prototypes of the app that serves them', async () => {
    let overrides: Record<string, unknown> = {};
    const { gateway, port } = await reloadable(() => overrides);
    // Express's request prototype names its app: the app a new request is made for.
    const appOfNewRequest = () => (Object.getPrototypeOf(new gateway.messageClasses.IncomingMessage(new Socket())) as { app?: unknown }).app;
    const before = appOfNewRequest();
    overrides = { rateLimit: { limits: { production: { default: 2 }, staging: { default: 2 } } } };
    await gateway.reload();
    const after = appOfNewRequest();
    expect(before).toBeTypeOf('function');
    expect(after).toBeTypeOf('function');
    expect(after).not.toBe(before);
    expect(await get(port, gateway.apiKey)).toEqual([200]);
  });

  it('gives new requests the new brownout windows', async () => {
    let overrides: Record<string, unknown> = {};
    const { gateway, port } = await reloadable(() => overrides);
    expect(await get(port, gateway.apiKey, '/v1/pets/1')).toEqual([200]);
    const window = { start: new Date(TEST_NOW - 60_000).toISOString(), end: new Date(TEST_NOW + 60_000).toISOString() };
    overrides = { deprecations: { getPet: { deprecatedAt: '2026-11-21T00:00:00Z', brownouts: [window] } } };
    await gateway.reload();
    expect(await get(port, gateway.apiKey, '/v1/pets/1')).toEqual([410]);
  });

  it('is refused when the new configuration does not validate: one error line naming the key, and the running configuration serves on', async () => {
    let overrides: Record<string, unknown> = { rateLimit: { limits: { production: { default: 1 }, staging: { default: 1 } } } };
    const { gateway, port } = await reloadable(() => overrides, overrides);
    overrides = { requests: { maxBodyBytes: 'lots' } };
    const outcome = await gateway.reload();
    expect(outcome).toMatchObject({ result: 'failure', reason: expect.stringContaining('requests.maxBodyBytes') });
    const refused = gateway.logs.filter((line) => String(line.msg).startsWith('configuration reload refused'));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ level: 50 });
    // The fault once, in the message: no field repeats it.
    expect(JSON.stringify(refused[0]).split('requests.maxBodyBytes')).toHaveLength(2);
    const key = gateway.addKey();
    expect([...(await get(port, key)), ...(await get(port, key))]).toEqual([200, 429]);
    expect(await reloads(gateway, 'failure')).toBe(1);
    expect(await reloads(gateway, 'success')).toBe(0);
  });

  it('is refused when it sets an admin token file on a gateway whose keys are in memory, as start-up is', async () => {
    let overrides: Record<string, unknown> = {};
    const { gateway } = await reloadable(() => overrides);
    const file = tokenFile(ADMIN_TOKEN);
    try {
      overrides = { adminApi: { tokenFile: file } };
      expect(await gateway.reload()).toEqual({
        result: 'failure',
        reason: 'ADMIN_API_TOKEN_FILE (adminApi.tokenFile): the admin API manages keys in Redis, and this gateway keeps its keys in memory',
      });
      expect(await reloads(gateway, 'failure')).toBe(1);
      expect(await reloads(gateway, 'success')).toBe(0);
    } finally {
      removeTokenFile(file);
    }
  });

  it('is refused, changing nothing, when a brownout names an operation the documents do not deprecate', async () => {
    let overrides: Record<string, unknown> = {};
    const { gateway, port } = await reloadable(() => overrides);
    overrides = {
      requests: { maxBodyBytes: 10 },
      deprecations: { listPets: { deprecatedAt: '2026-11-21T00:00:00Z', brownouts: [{ start: '2026-11-21T00:00:00Z', end: '2026-11-22T00:00:00Z' }] } },
    };
    expect(await gateway.reload()).toMatchObject({ result: 'failure', reason: expect.stringContaining('deprecations.listPets.brownouts') });
    // Still the running limit of 65536 bytes, not the refused file's 10.
    expect(await createPet(port, gateway.apiKey)).toEqual([200]);
  });

  it('names the settings that need a restart, keeps them as they run, and takes up the rest', async () => {
    let overrides: Record<string, unknown> = {};
    const { gateway, port } = await reloadable(() => overrides);
    overrides = { listen: { maxInFlight: 1 }, requests: { maxBodyBytes: 10 } };
    expect(await gateway.reload()).toMatchObject({ result: 'success', changed: ['requests.maxBodyBytes'], needRestart: ['listen.maxInFlight'] });
    expect(gateway.logs.find((line) => String(line.msg).includes('take effect only after a restart'))).toMatchObject({
      level: 40,
      settings: ['listen.maxInFlight'],
    });
    expect(gateway.logs.find((line) => line.msg === 'configuration reloaded')).toMatchObject({ level: 30, changed: ['requests.maxBodyBytes'] });
    expect(await createPet(port, gateway.apiKey)).toEqual([413]);
  });

  it('lets a request already in flight finish where it started', async () => {
    let release: (() => void) | undefined;
    const atUpstream = new Promise<void>((resolve) => {
      answer = (req, res) => {
        release = () => answerAtOnce(req, res);
        resolve();
      };
    });
    let overrides: Record<string, unknown> = {};
    const { gateway, port } = await reloadable(() => overrides);
    const inFlight = get(port, gateway.apiKey);
    await atUpstream;
    overrides = { upstream: { timeoutMs: 50 } };
    expect(await gateway.reload()).toMatchObject({ result: 'success' });
    // Longer than the new configuration's timeout: the exchange under way keeps the one it started with.
    await new Promise((resolve) => setTimeout(resolve, 200));
    release!();
    // The running exchange keeps its own timeout; its pool closes only once it has answered.
    expect(await inFlight).toEqual([200]);
  });
});

describe('a configuration reload and what outlives it', () => {
  it('keeps an open circuit open when the breaker settings stay the same, and the gauge follows the breaker in use', async () => {
    let healthy = false;
    answer = (_req, res) => (healthy ? answerAtOnce(_req, res) : res.writeHead(503, { 'Content-Type': 'application/json' }).end('{}'));
    const breaker = { upstream: { circuitBreaker: { failureThreshold: 2, openMs: 60_000 } } };
    let overrides: Record<string, unknown> = breaker;
    const { gateway, port } = await reloadable(() => overrides, breaker);
    const circuit = async () => parseExposition(await gateway.scrape()).get(seriesKey('petstore_gateway_upstream_circuit_open', { environment: 'production' }));
    expect([...(await get(port, gateway.apiKey)), ...(await get(port, gateway.apiKey))]).toEqual([503, 503]);
    expect(await circuit()).toBe(1);
    const calls = upstream.requests.length;
    overrides = { ...breaker, requests: { maxBodyBytes: 1000 } };
    await gateway.reload();
    // Refused at once, as before the reload: the backend is not asked again.
    expect(await get(port, gateway.apiKey)).toEqual([503]);
    expect(upstream.requests.length).toBe(calls);
    expect(await circuit()).toBe(1);
    // New breaker settings: a new, closed breaker, and the gauge says so.
    healthy = true;
    overrides = { upstream: { circuitBreaker: { failureThreshold: 3, openMs: 60_000 } } };
    await gateway.reload();
    expect(await circuit()).toBe(0);
    expect(await get(port, gateway.apiKey)).toEqual([200]);
  });

  it('says what it did before a new, quieter log level applies, which then holds', async () => {
    let overrides: Record<string, unknown> = {};
    const { gateway, port } = await reloadable(() => overrides);
    overrides = { logging: { level: 'warn' } };
    await gateway.reload();
    expect(gateway.logs.filter((line) => line.msg === 'configuration reloaded')).toHaveLength(1);
    const before = gateway.logs.length;
    expect(await get(port, gateway.apiKey)).toEqual([200]);
    await new Promise((resolve) => setImmediate(resolve));
    // The 200's access line is info: not written any more.
    expect(gateway.logs.slice(before)).toEqual([]);
  });

  it("closes the retired configuration's upstream connections once its requests are answered", async () => {
    let overrides: Record<string, unknown> = {};
    const { gateway, port } = await reloadable(() => overrides);
    expect(await get(port, gateway.apiKey)).toEqual([200]);
    const open = upstream.openConnections();
    expect(open).toBeGreaterThan(0);
    overrides = { upstream: { timeoutMs: 5000 } };
    await gateway.reload();
    await waitFor(async () => upstream.openConnections() === open - 1);
    expect(await get(port, gateway.apiKey)).toEqual([200]);
  });

  it('runs the reloads asked for during one as one more, after it', async () => {
    const { gateway } = await reloadable(() => ({}));
    const outcomes = await Promise.all([gateway.reload(), gateway.reload(), gateway.reload()]);
    expect(outcomes.map((outcome) => outcome.result)).toEqual(['success', 'success', 'success']);
    expect(await reloads(gateway, 'success')).toBe(2);
  });

  it('is refused once the gateway has shut down', async () => {
    const { gateway } = await reloadable(() => ({}));
    await stop!();
    stop = undefined;
    expect(await gateway.reload()).toEqual({ result: 'failure', reason: 'the gateway is shutting down' });
  });
});

describe('a reload re-reads the identity key file', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'config-reload-identity-'));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('so a rotated key signs from the next request on, and the JWKS publishes it', async () => {
    const keyFile = join(dir, 'identity.pem');
    const first = await writeSigningKeyFile(keyFile, 'ed25519');
    const upstreamIdentity = { keyFile };
    const identity = await loadUpstreamIdentity(loadConfig({}, { upstreamIdentity }).upstreamIdentity, {
      environment: 'production',
      clock: fixedClock(Date.now()),
    });
    gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl, env: { PORT: '0', ADMIN_PORT: '0' }, overrides: { upstreamIdentity }, identity });
    const running = await gateway.listen();
    stop = () => running.shutdown('test over');
    const kidSent = async () => {
      expect(await get(running.port, gateway!.apiKey)).toEqual([200]);
      return decodeProtectedHeader(String(upstream.requests.at(-1)!.headers.authorization).replace(/^Bearer /, '')).kid;
    };
    const published = async () =>
      ((await (await fetch(`http://127.0.0.1:${running.adminPort}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> }).keys.map(
        (jwk) => jwk.kid,
      );
    expect(await kidSent()).toBe(first.kid);

    await rm(keyFile);
    const second = await writeSigningKeyFile(keyFile, 'ed25519');
    expect(await gateway.reload()).toMatchObject({ result: 'success' });
    expect(await kidSent()).toBe(second.kid);
    expect(await published()).toEqual([second.kid]);
  });
});
