// Shadow traffic with two real backends: production, and a staging that differs in known ways. The report names exactly those
// differences, learns the field random in both as noise; production's answers are the bytes a gateway without shadowing gives.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { writeSigningKeyFile } from '../../src/identity/generate-key.ts';
import { loadUpstreamIdentity, type UpstreamIdentity } from '../../src/identity/upstream-identity.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { scaled } from '../../support/time-scale.ts';
import { buildTestGateway, TEST_NOW } from '../helpers/build-test-app.ts';
import { sendRaw, startRawUpstream, startRecordingUpstream, type RecordedRequest, type RecordingUpstream } from '../helpers/raw-socket.ts';
import { startEdge, type Edge } from '../helpers/start-edge.ts';

const HOUR = 3_600_000;

/** Random-looking, and so in both backends: differs between environments and between two asks of one request, the same for a request id's first ask. */
function nonceFor(environment: string, asks: Map<string, number>, req: RecordedRequest): string {
  const id = String(req.headers['x-request-id']);
  const ask = asks.get(id) ?? 0;
  asks.set(id, ask + 1);
  return createHash('sha256').update(`${environment} ${id}#${ask}`).digest('hex').slice(0, 12);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)), Date: 'Sat, 21 Nov 2026 12:00:00 GMT' });
  res.end(text);
}

/**
 * The pet store as production answers it; `staging` renames `status` to `state` and has no pet 7. The random field is `name`, one
 * the document declares, so that its noise has a pointer of its own; an undeclared random member is reported as `*` (the report
 * holds the document's names only), as the undeclared member staging adds is: see 'noise at a member the document does not
 * declare' below for the two apart.
 */
function petStore(environment: 'production' | 'staging', asks: Map<string, number>) {
  return (req: RecordedRequest, res: ServerResponse) => {
    const nonce = nonceFor(environment, asks, req);
    const pet = (id: number) =>
      environment === 'production'
        ? { id, name: `pet ${id} ${nonce}`, categoryId: 2, status: 'available' }
        : { id, name: `pet ${id} ${nonce}`, categoryId: 2, state: 'available' };
    const path = req.url.split('?')[0]!;
    if (path === '/v1/pets') return json(res, 200, [pet(1), pet(2)]);
    const single = /^\/v1\/pets\/(\d+)$/.exec(path);
    if (single && !(environment === 'staging' && single[1] === '7')) return json(res, 200, pet(Number(single[1])));
    json(res, 404, { code: 'not_found', message: 'No such pet', status: 404 });
  };
}

const TARGETS = ['/v1/pets', '/v1/pets/1', '/v1/pets/7', '/v1/pets?limit=2', '/v1/pets/3'];

function rawGet(edge: Edge, target: string, id: string): string {
  return `GET ${target} HTTP/1.1\r\nHost: gateway.test\r\nX-Request-Id: ${id}\r\nAuthorization: Bearer ${edge.gateway.apiKey}\r\nConnection: close\r\n\r\n`;
}

/** Every request of TARGETS on its own connection, with fixed request ids: the bytes each client got. */
async function clientBytes(edge: Edge): Promise<string[]> {
  const answers: string[] = [];
  for (const [index, target] of TARGETS.entries()) {
    const answer = await sendRaw(edge.running.port, rawGet(edge, target, `shadow-req-${index}`), { responses: 1 });
    // What tells the time is set aside (the Date field, the seconds left in the rate-limit window, `t=`): the rest is the same
    // byte for byte.
    answers.push(answer.text.replace(/^Date: .*\r\n/m, '').replace(/^(RateLimit: .*; t=)\d+/m, '$1<seconds>'));
  }
  return answers;
}

describe('shadow traffic to a staging that differs from production in known ways', () => {
  // Cleared before each gateway's run: a request id's first answer is the same in every run.
  const productionAsks = new Map<string, number>();
  let production: RecordingUpstream;
  let staging: RecordingUpstream;
  let keyDirectory: string;
  let identity: UpstreamIdentity;
  let upstreamIdentity: Record<string, unknown>;
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    keyDirectory = await mkdtemp(join(tmpdir(), 'shadow-identity-'));
    const keyFile = join(keyDirectory, 'identity.pem');
    await writeSigningKeyFile(keyFile, 'ed25519');
    upstreamIdentity = { keyFile };
    const config = loadConfig({}, { upstreamIdentity });
    identity = await loadUpstreamIdentity(config.upstreamIdentity, { environment: 'production', clock: fixedClock(TEST_NOW) });
    production = await startRecordingUpstream(petStore('production', productionAsks));
    closers.push(() => production.close());
    staging = await startRecordingUpstream(petStore('staging', new Map()));
    closers.push(() => staging.close());
  });

  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await rm(keyDirectory, { recursive: true, force: true });
  });

  async function gateway(shadow: Record<string, unknown>): Promise<Edge> {
    const edge = await startEdge(production.baseUrl, { upstreamIdentity, shadow }, identity);
    closers.push(() => edge.close());
    return edge;
  }

  it('reports the renamed field and the changed status, learns the random field as noise, and leaves the client its bytes', async () => {
    const off = await gateway({});
    productionAsks.clear();
    const unshadowed = await clientBytes(off);
    expect(staging.requests).toHaveLength(0);

    const on = await gateway({ sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 1 });
    productionAsks.clear();
    const shadowed = await clientBytes(on);
    expect(shadowed).toEqual(unshadowed);

    const compared = () =>
      on.gateway
        .scrape()
        .then((text) => [...text.matchAll(/^petstore_gateway_shadow_comparisons_total\{.*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0));
    await waitFor(async () => (await compared()) === TARGETS.length, scaled(10_000));

    const report = await on.gateway.shadowReport.read({ from: TEST_NOW - HOUR, to: TEST_NOW + HOUR });
    const byOperation = Object.fromEntries(report.operations.map((operation) => [operation.operation, operation]));
    expect(byOperation.listPets?.results).toMatchObject({ differ: 2, match: 0, staging_error: 0, staging_off_contract: 0, skipped: 0 });
    expect(byOperation.listPets?.differences.map(({ pointer, kind }) => ({ pointer, kind }))).toEqual(
      expect.arrayContaining([
        { pointer: '/*/status', kind: 'missing' },
        // `state` is no name of the document's: the report says a member was added, not which.
        { pointer: '/*/*', kind: 'extra' },
      ]),
    );
    expect(byOperation.listPets?.differences).toHaveLength(2);
    expect(byOperation.getPet?.differences.map(({ pointer, kind }) => ({ pointer, kind }))).toEqual(
      expect.arrayContaining([
        { pointer: '/status', kind: 'status' },
        { pointer: '/status', kind: 'missing' },
        { pointer: '/*', kind: 'extra' },
      ]),
    );
    expect(byOperation.getPet?.differences).toHaveLength(3);
    expect(byOperation.listPets?.learntNoise.map(({ pointer }) => pointer)).toEqual(['/*/name']);
    expect(byOperation.getPet?.learntNoise.map(({ pointer }) => pointer)).toEqual(['/name']);
    expect(byOperation.listPets?.noise.map(({ pointer }) => pointer)).toEqual(['/*/name']);
    expect(byOperation.getPet?.noise.map(({ pointer }) => pointer)).toEqual(['/name']);

    const metrics = await on.gateway.scrape();
    expect(metrics).toContain('petstore_gateway_shadow_comparisons_total{operation="getPet",result="differ",environment="production"} 3');
    expect(metrics).toContain('petstore_gateway_shadow_differences_total{operation="getPet",kind="status",environment="production"} 1');
  });

  it('sends staging the shadow mark and the staging identity, never the API key', async () => {
    const on = await gateway({ sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 0 });
    await sendRaw(on.running.port, rawGet(on, '/v1/pets/1', 'shadow-mark-1'), { responses: 1 });
    const copyOf = () => staging.requests.find((request) => request.headers['x-request-id'] === 'shadow-mark-1');
    await waitFor(async () => copyOf() !== undefined, scaled(10_000));
    const copy = copyOf()!;
    expect(copy.headers['x-gateway-shadow']).toBe('1');
    expect(copy.headers['x-request-id']).toBe('shadow-mark-1');
    const token = String(copy.headers.authorization).replace(/^Bearer /, '');
    expect(decodeJwt(token)).toMatchObject({ environment: 'staging', sub: on.gateway.keyId, operation_id: 'getPet' });
    const original = production.requests.find((request) => request.headers['x-request-id'] === 'shadow-mark-1')!;
    expect(decodeJwt(String(original.headers.authorization).replace(/^Bearer /, ''))).toMatchObject({ environment: 'production' });
    expect(original.headers['x-gateway-shadow']).toBeUndefined();
    for (const request of [...staging.requests, ...production.requests]) {
      expect(request.rawHeaders.join('\n')).not.toContain(on.gateway.apiKey);
    }
  });
});

describe('noise at a member the document does not declare', () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });

  /** Pets with an undeclared `nonce`, random between environments and between two asks of one request; staging adds `state`. */
  function noncePets(environment: 'production' | 'staging', asks: Map<string, number>) {
    return (req: RecordedRequest, res: ServerResponse) => {
      const nonce = nonceFor(environment, asks, req);
      const pet = (id: number) => ({
        id,
        name: `pet ${id}`,
        categoryId: 2,
        status: 'available',
        nonce,
        ...(environment === 'staging' ? { state: 'new' } : {}),
      });
      json(res, 200, [pet(1), pet(2)]);
    };
  }

  it('learns a changing value at * as value noise, and still reports staging adding a member at * as a difference', async () => {
    const production = await startRecordingUpstream(noncePets('production', new Map()));
    closers.push(() => production.close());
    const staging = await startRecordingUpstream(noncePets('staging', new Map()));
    closers.push(() => staging.close());
    const edge = await startEdge(production.baseUrl, { shadow: { sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 1 } });
    closers.push(() => edge.close());

    for (const id of ['nonce-1', 'nonce-2']) await sendRaw(edge.running.port, rawGet(edge, '/v1/pets', id), { responses: 1 });
    const compared = () =>
      edge.gateway
        .scrape()
        .then((text) => [...text.matchAll(/^petstore_gateway_shadow_comparisons_total\{.*\} (\d+)$/gm)].reduce((sum, [, n]) => sum + Number(n), 0));
    await waitFor(async () => (await compared()) === 2, scaled(10_000));

    const [listPets] = (await edge.gateway.shadowReport.read({ from: TEST_NOW - HOUR, to: TEST_NOW + HOUR })).operations;
    const named = (list: ReadonlyArray<{ pointer: string; kind?: string; count?: number; sightings?: number }>) =>
      list.map(({ pointer, kind, count, sightings }) => `${kind} ${pointer} ${count ?? sightings}`);
    expect(listPets!.results).toMatchObject({ differ: 2, match: 0 });
    expect(named(listPets!.differences)).toEqual(['extra /*/* 2']);
    expect(named(listPets!.noise)).toEqual(['value /*/* 2']);
    expect(named(listPets!.learntNoise)).toEqual(['value /*/* 2']);
  });
});

describe('which requests are shadowed', () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });

  async function backends() {
    const production = await startRecordingUpstream(petStore('production', new Map()));
    closers.push(() => production.close());
    const staging = await startRecordingUpstream(petStore('staging', new Map()));
    closers.push(() => staging.close());
    return { production, staging };
  }

  const createPet = (edge: Edge, id: string) => {
    const body = '{"name":"Rex","categoryId":2}';
    return `POST /v1/pets HTTP/1.1\r\nHost: gateway.test\r\nX-Request-Id: ${id}\r\nAuthorization: Bearer ${edge.gateway.apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
  };
  const copyOf = (staging: RecordingUpstream, id: string) => staging.requests.find((request) => request.headers['x-request-id'] === id);

  it('leaves an unsafe operation alone under the default share', async () => {
    const { production, staging } = await backends();
    const edge = await startEdge(production.baseUrl, { shadow: { sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 0 } });
    closers.push(() => edge.close());
    await sendRaw(edge.running.port, createPet(edge, 'unsafe-post-1'), { responses: 1 });
    // The GET after it is shadowed: once its copy arrived, the POST's would have too.
    await sendRaw(edge.running.port, rawGet(edge, '/v1/pets', 'unsafe-get-1'), { responses: 1 });
    await waitFor(async () => copyOf(staging, 'unsafe-get-1') !== undefined, scaled(10_000));
    expect(production.requests.map((request) => request.method)).toEqual(['POST', 'GET']);
    expect(staging.requests.map((request) => request.method)).toEqual(['GET']);
  });

  it('shadows an unsafe operation named in shadow.sample, its body and all', async () => {
    const { production, staging } = await backends();
    const edge = await startEdge(production.baseUrl, { shadow: { sample: { createPet: 1 }, upstreamUrl: staging.baseUrl } });
    closers.push(() => edge.close());
    await sendRaw(edge.running.port, createPet(edge, 'named-post-1'), { responses: 1 });
    await waitFor(async () => copyOf(staging, 'named-post-1') !== undefined, scaled(10_000));
    const copy = copyOf(staging, 'named-post-1')!;
    expect(copy.method).toBe('POST');
    expect(copy.body.toString()).toBe('{"name":"Rex","categoryId":2}');
    expect(copy.headers['x-gateway-shadow']).toBe('1');
    // Safe operations are not shadowed: no default share.
    await sendRaw(edge.running.port, rawGet(edge, '/v1/pets', 'named-get-1'), { responses: 1 });
    expect(production.requests).toHaveLength(2);
    expect(staging.requests).toHaveLength(1);
  });
});

describe('shadow settings on a reload', () => {
  it('are taken up by the next request, without a restart', async () => {
    const production = await startRecordingUpstream(petStore('production', new Map()));
    const staging = await startRecordingUpstream(petStore('staging', new Map()));
    let overrides: Record<string, unknown> = {};
    const gateway = buildTestGateway({ upstreamUrl: production.baseUrl, env: { PORT: '0', ADMIN_PORT: '0' }, reloadOverrides: () => overrides });
    const running = await gateway.listen();
    try {
      const get = (id: string) =>
        sendRaw(
          running.port,
          `GET /v1/pets HTTP/1.1\r\nHost: g\r\nX-Request-Id: ${id}\r\nAuthorization: Bearer ${gateway.apiKey}\r\nConnection: close\r\n\r\n`,
          {
            responses: 1,
          },
        );
      await get('reload-before-1');
      overrides = { shadow: { sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 0 } };
      const outcome = await gateway.reload();
      expect(outcome).toMatchObject({ result: 'success', needRestart: [] });
      expect(outcome.result === 'success' && outcome.changed).toEqual(
        expect.arrayContaining(['shadow.sample.default', 'shadow.upstreamUrl', 'shadow.noiseSample']),
      );
      await get('reload-after-1');
      await waitFor(async () => staging.requests.length === 1, scaled(10_000));
      expect(staging.requests.map((request) => request.headers['x-request-id'])).toEqual(['reload-after-1']);
    } finally {
      await running.shutdown('test over');
      await production.close();
      await staging.close();
    }
  });
});

describe('shadow.ignore', () => {
  it('refuses a pointer naming a member the document does not declare, at start and on a reload: it would never match', async () => {
    const production = await startRecordingUpstream(petStore('production', new Map()));
    const staging = await startRecordingUpstream(petStore('staging', new Map()));
    const shadow = (ignore: Record<string, string[]>) => ({ shadow: { sample: { default: 1 }, upstreamUrl: staging.baseUrl, ignore } });
    const refusal =
      'shadow.ignore.listPets: /*/updatedAt names the member "updatedAt", which no response of listPets declares; differences there are reported as * (the report holds the document\'s names only): write * in its place';
    let overrides: Record<string, unknown> = shadow({ listPets: ['/*/name', '/*/*', '/headers/x-total-count', '/status'] });
    const gateway = buildTestGateway({ upstreamUrl: production.baseUrl, overrides, reloadOverrides: () => overrides });
    try {
      expect(() => buildTestGateway({ upstreamUrl: production.baseUrl, overrides: shadow({ listPets: ['/*/updatedAt'] }) })).toThrow(refusal);
      overrides = shadow({ listPets: ['/*/name', '/*/updatedAt'] });
      const outcome = await gateway.reload();
      expect(outcome).toMatchObject({ result: 'failure' });
      expect(outcome.result === 'failure' && outcome.reason).toContain(refusal);
    } finally {
      await gateway.close();
      await production.close();
      await staging.close();
    }
  });
});

describe('shadow traffic to a staging that never answers', () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });

  it('answers every client as fast as without it, skips and counts what the bounds leave out, holds no more than the bound', async () => {
    const production = await startRecordingUpstream(petStore('production', new Map()));
    closers.push(() => production.close());
    const heard: string[] = [];
    // Reads each request and never answers.
    const staging = await startRawUpstream((_socket, received) => heard.push(received));
    closers.push(() => staging.close());
    // Each production answer is 72 bytes: maxBytes lets two be held while staging says nothing; maxInFlight would allow 4.
    const edge = await startEdge(production.baseUrl, {
      shadow: { sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 0, maxInFlight: 4, maxBytes: 200, timeoutMs: 600_000 },
    });
    closers.push(() => edge.close());

    const requests = 40;
    for (let index = 0; index < requests; index++) {
      const started = performance.now();
      const answer = await sendRaw(edge.running.port, rawGet(edge, '/v1/pets/1', `stalled-${index}`), { responses: 1 });
      expect(answer.statuses).toEqual([200]);
      // Nothing waits for staging: a production round trip on loopback, far below the shadow's timeout.
      expect(performance.now() - started).toBeLessThan(scaled(2000));
    }
    await waitFor(async () => heard.length === 2, scaled(5000));
    const metrics = await edge.gateway.scrape();
    expect(metrics).toContain(`petstore_gateway_shadow_comparisons_total{operation="getPet",result="skipped",environment="production"} ${requests - 2}`);
    expect(metrics).not.toContain('result="staging_error"');
    // Only the two copies the memory bound allowed were sent: the others were dropped once over it.
    expect(heard).toHaveLength(2);
    for (const request of heard) expect(request).toContain('x-gateway-shadow: 1');
  });
});
