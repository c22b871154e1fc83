// Which headers cross the gateway, byte for byte: the allow-list each way, the Forwarded chain, singletons sent twice, and a backend that refuses the gateway.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { loadConfig } from '../../src/config/load-config.ts';
import { writeSigningKeyFile } from '../../src/identity/generate-key.ts';
import { loadUpstreamIdentity } from '../../src/identity/upstream-identity.ts';
import { fixedClock } from '../../src/time/clock.ts';
import type { TestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { parseResponses, sendRaw, startRecordingUpstream, type RecordedRequest, type RecordingUpstream } from '../helpers/raw-socket.ts';
import { startEdge, type Edge } from '../helpers/start-edge.ts';

type Answer = (req: RecordedRequest, res: ServerResponse) => void;

/** A JSON answer with exactly these header lines (Content-Length added). */
function answerWith(status: number, headers: Record<string, string | string[]>, body = '[]'): Answer {
  return (_req, res) => {
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers, 'Content-Length': String(Buffer.byteLength(body)) });
    res.end(body);
  };
}

/** What the shared upstream answers next; reset to `[]` before each test. */
let answer: Answer;
let upstream: RecordingUpstream;
let edge: Edge;
let key: string;

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => answer(req, res));
  edge = await startEdge(upstream.baseUrl);
  key = edge.gateway.apiKey;
});
afterAll(async () => {
  await edge.close();
  await upstream.close();
});
beforeEach(() => {
  answer = answerWith(200, {});
});

/** A GET with the edge's key and these extra header lines (each ending in CRLF). */
const get = (extra = '', path = '/v1/pets', apiKey = key) => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${apiKey}\r\n${extra}\r\n`;

/** The header lines of the first response, as written, without the status line. */
function headLines(text: string): string[] {
  return text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n').slice(1);
}

const headNames = (text: string) => headLines(text).map((line) => line.slice(0, line.indexOf(':')).toLowerCase());

function errorOf(text: string): unknown {
  const [response] = parseResponses(text);
  return response ? JSON.parse(response.body) : undefined;
}

/** The request the upstream received for one request sent to `port`. */
async function receivedFor(bytes: string, port = edge.running.port, recorder = upstream): Promise<RecordedRequest> {
  const before = recorder.requests.length;
  const sent = await sendRaw(port, bytes, { responses: 1 });
  expect(sent.statuses).toEqual([200]);
  expect(recorder.requests.length).toBe(before + 1);
  return recorder.requests.at(-1)!;
}

async function metric(gateway: TestGateway, name: string, labels: Record<string, string>): Promise<number | undefined> {
  return parseExposition(await gateway.scrape()).get(seriesKey(`petstore_gateway_${name}`, { ...labels, environment: 'production' }));
}

describe('the Forwarded header the upstream receives', () => {
  const forwardedFrom = async (value: string) => (await receivedFor(get(`Forwarded: ${value}\r\n`))).headers.forwarded;

  it("drops a client value that leaves a quote open, so the gateway's element is whole and last", async () => {
    expect(await forwardedFrom('for=1.2.3.4;host="x')).toBe('for=127.0.0.1;proto=http;host="x"');
  });

  it("keeps a client value that parses, and appends the gateway's element to it", async () => {
    expect(await forwardedFrom('for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"')).toBe(
      'for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711", for=127.0.0.1;proto=http;host="x"',
    );
  });

  it.each(['for=1.2.3.4;for=5.6.7.8', 'for=1.2.3.4 ;proto=https', 'for=1.2.3.4,', 'for', 'for="1.2.3.4\\"', 'for=1.2.3.4;host=a"b'])(
    'drops %j, which is not RFC 7239',
    async (value) => {
      expect(await forwardedFrom(value)).toBe('for=127.0.0.1;proto=http;host="x"');
    },
  );

  it('reads two Forwarded lines as one list', async () => {
    const received = await receivedFor(get('Forwarded: for=192.0.2.1\r\nForwarded: for=192.0.2.2\r\n'));
    expect(received.headers.forwarded).toBe('for=192.0.2.1, for=192.0.2.2, for=127.0.0.1;proto=http;host="x"');
  });
});

describe('the headers the upstream receives', () => {
  it("are the client's allowed ones, in the order sent, then the gateway's own: nothing else", async () => {
    await receivedFor(
      get(
        'Accept: application/json\r\nAccept-Encoding: gzip\r\nAccept-Language: fr\r\nIf-None-Match: "v1"\r\nCache-Control: no-cache\r\n' +
          'User-Agent: probe/1\r\nCookie: session=1\r\nOrigin: https://elsewhere.example\r\nReferer: https://elsewhere.example/\r\n' +
          'traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\ntracestate: vendor=1\r\nbaggage: tenant=a\r\n' +
          'X-Custom: 1\r\nPrefer: return=minimal\r\nX-Request-Id: header-policy-0001\r\n',
      ),
    );
    // The pooled connection carries earlier requests too: the last one is this test's.
    const bytes = upstream.connections.find((connection) => connection.includes('header-policy-0001'))!;
    // The trace goes on with the gateway's span as the parent (test/integration/tracing.test.ts), stated after the copied headers.
    const sent = bytes.slice(bytes.lastIndexOf('GET /v1/pets HTTP/1.1'));
    expect(sent).toMatch(/\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-(?!b7ad6b7169203331)[0-9a-f]{16}-01\r\n/);
    expect(sent.replace(/traceparent: [^\r]*\r\n/, '')).toBe(
      'GET /v1/pets HTTP/1.1\r\n' +
        `host: 127.0.0.1:${upstream.port}\r\n` +
        'connection: keep-alive\r\n' +
        'accept: application/json\r\n' +
        'accept-encoding: gzip\r\n' +
        'accept-language: fr\r\n' +
        'if-none-match: "v1"\r\n' +
        'cache-control: no-cache\r\n' +
        'user-agent: probe/1\r\n' +
        'tracestate: vendor=1\r\n' +
        'baggage: tenant=a\r\n' +
        'x-request-id: header-policy-0001\r\n' +
        'x-forwarded-for: 127.0.0.1\r\n' +
        'x-forwarded-proto: http\r\n' +
        'x-forwarded-host: x\r\n' +
        'forwarded: for=127.0.0.1;proto=http;host="x"\r\n' +
        'x-real-ip: 127.0.0.1\r\n\r\n',
    );
  });

  it.each([
    'True-Client-IP: 6.6.6.6',
    'X-Client-IP: 6.6.6.6',
    'X-Forwarded-Prefix: /admin',
    'X-Forwarded-Scheme: https',
    'X-Forwarded-Ssl: on',
    'X-Forwarded-Server: trusted.internal',
    'Front-End-Https: on',
    'X-Host: trusted.internal',
    'X-Original-Host: trusted.internal',
  ])('never carry the client\'s "%s", a claim the gateway does not make', async (line) => {
    const name = line.slice(0, line.indexOf(':')).toLowerCase();
    const received = await receivedFor(get(`${line}\r\n`));
    expect(received.headers[name]).toBeUndefined();
    expect(received.headers['x-real-ip']).toBe('127.0.0.1');
  });

  it('carry a header listed in headers.forwardToUpstream', async () => {
    const extended = await startEdge(upstream.baseUrl, { headers: { forwardToUpstream: ['x-tenant-hint'] } });
    try {
      const received = await receivedFor(get('X-Tenant-Hint: blue\r\nX-Other: 1\r\n', '/v1/pets', extended.gateway.apiKey), extended.running.port);
      expect(received.headers['x-tenant-hint']).toBe('blue');
      expect(received.headers['x-other']).toBeUndefined();
    } finally {
      await extended.close();
    }
  });

  describe('with a header parameter in the document', () => {
    let dir: string;
    let declaring: Edge;
    beforeAll(async () => {
      // The pet store's document, with listPets declaring an `X-Tenant` header parameter.
      dir = await mkdtemp(join(tmpdir(), 'header-policy-'));
      const document = parseYaml(await readFile(new URL('../../config/petstore.openapi.yaml', import.meta.url), 'utf8')) as {
        paths: Record<string, Record<string, { parameters?: unknown[] }>>;
      };
      document.paths['/pets']!.get!.parameters!.push({ name: 'X-Tenant', in: 'header', required: false, schema: { type: 'string' } });
      await writeFile(join(dir, 'petstore.openapi.yaml'), stringifyYaml(document));
      declaring = await startEdge(upstream.baseUrl, { contract: join(dir, 'petstore.openapi.yaml') });
    });
    afterAll(async () => {
      await declaring?.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('carry it for the operation that declares it', async () => {
      const received = await receivedFor(get('X-Tenant: blue\r\n', '/v1/pets', declaring.gateway.apiKey), declaring.running.port);
      expect(received.headers['x-tenant']).toBe('blue');
    });

    it('do not carry it for another operation', async () => {
      const received = await receivedFor(get('X-Tenant: blue\r\n', '/v1/pets/1', declaring.gateway.apiKey), declaring.running.port);
      expect(received.headers['x-tenant']).toBeUndefined();
    });
  });
});

describe('the headers the client receives from the upstream', () => {
  const HOSTILE = {
    'Cache-Control': 'max-age=5',
    ETag: '"v1"',
    Vary: 'Accept',
    'Set-Cookie': 'sid=1; Domain=elsewhere.example; Path=/',
    Location: 'https://elsewhere.example/',
    'Strict-Transport-Security': 'max-age=0',
    'Access-Control-Allow-Origin': 'https://elsewhere.example',
    'Access-Control-Allow-Credentials': 'true',
    'X-Powered-By': 'Express',
    Server: 'backend/1.0',
  };

  it("are the standard ones and the gateway's own: cookies, redirects, HSTS, CORS and fingerprints stay behind", async () => {
    answer = answerWith(200, HOSTILE);
    const sent = await sendRaw(edge.running.port, get('X-Request-Id: header-policy-0002\r\n'), { responses: 1 });
    expect(sent.statuses).toEqual([200]);
    expect(headNames(sent.text).sort()).toEqual(
      [
        'cache-control',
        'connection',
        'content-length',
        'content-type',
        'date',
        'etag',
        'keep-alive',
        'ratelimit',
        'ratelimit-policy',
        'vary',
        'x-request-id',
      ].sort(),
    );
    expect(headLines(sent.text).filter((line) => /^(cache-control|etag|vary|x-request-id):/i.test(line))).toEqual([
      'X-Request-Id: header-policy-0002',
      'cache-control: max-age=5',
      'etag: "v1"',
      'vary: Accept',
    ]);
  });

  it('count what they leave behind, by operation', async () => {
    answer = answerWith(200, HOSTILE);
    const before = await metric(edge.gateway, 'upstream_response_headers_dropped_total', { operation: 'listPets' });
    await sendRaw(edge.running.port, get(), { responses: 1 });
    // Set-Cookie, Location, Strict-Transport-Security, both Access-Control-*, X-Powered-By, Server.
    expect(await metric(edge.gateway, 'upstream_response_headers_dropped_total', { operation: 'listPets' })).toBe(before! + 7);
  });

  it('include a header the document declares for that operation and status: Location on createPet 201, not on listPets 200', async () => {
    answer = (req, res) => answerWith(req.method === 'POST' ? 201 : 200, { Location: '/v1/pets/9' }, '{"id":9,"name":"Nibbles","categoryId":4}')(req, res);
    const pet = '{"name":"Nibbles","categoryId":4}';
    const created = await sendRaw(
      edge.running.port,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${pet.length}\r\n\r\n${pet}`,
      { responses: 1 },
    );
    const listed = await sendRaw(edge.running.port, get(), { responses: 1 });
    expect(parseResponses(created.text)[0]!.headers.location).toBe('/v1/pets/9');
    expect(parseResponses(listed.text)[0]!.headers.location).toBeUndefined();
  });

  it('include the Retry-After of a backend 503, which the document declares for it', async () => {
    answer = answerWith(503, { 'Retry-After': '7', 'X-Backend-Node': 'b1' }, '{"code":"busy","message":"Try later","status":503}');
    const sent = await sendRaw(edge.running.port, get(), { responses: 1 });
    expect(sent.statuses).toEqual([503]);
    expect(parseResponses(sent.text)[0]!.headers).toMatchObject({ 'retry-after': '7' });
    expect(parseResponses(sent.text)[0]!.headers['x-backend-node']).toBeUndefined();
  });

  it("never include the backend's rate-limit fields: the gateway's own win", async () => {
    answer = answerWith(200, { RateLimit: '"backend"; r=0; t=1' });
    const sent = await sendRaw(edge.running.port, get(), { responses: 1 });
    expect(parseResponses(sent.text)[0]!.headers.ratelimit).toMatch(/^"listPets"; r=\d+; t=\d+$/);
  });

  it('include a header listed in headers.relayToClient', async () => {
    const extended = await startEdge(upstream.baseUrl, { headers: { relayToClient: ['x-backend-version'] } });
    answer = answerWith(200, { 'X-Backend-Version': '2.1', 'X-Other': '1' });
    try {
      const sent = await sendRaw(extended.running.port, get('', '/v1/pets', extended.gateway.apiKey), { responses: 1 });
      expect(parseResponses(sent.text)[0]!.headers['x-backend-version']).toBe('2.1');
      expect(parseResponses(sent.text)[0]!.headers['x-other']).toBeUndefined();
    } finally {
      await extended.close();
    }
  });
});

describe("the gateway's identity token", () => {
  let dir: string;
  let signing: Edge;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'header-policy-identity-'));
    const keyFile = join(dir, 'identity.pem');
    await writeSigningKeyFile(keyFile, 'ed25519');
    const upstreamIdentity = { keyFile };
    const config = loadConfig({}, { upstreamIdentity });
    const identity = await loadUpstreamIdentity(config.upstreamIdentity, { environment: 'production', clock: fixedClock(Date.now()) });
    signing = await startEdge(upstream.baseUrl, { upstreamIdentity }, identity);
  });
  afterAll(async () => {
    await signing?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The token the upstream received with the request, and the answer the client got. */
  async function echoed(echo: (token: string) => Answer): Promise<{ token: string; text: string; statuses: number[] }> {
    answer = (req, res) => echo(String(req.headers.authorization).replace(/^Bearer /, ''))(req, res);
    const sent = await sendRaw(signing.running.port, get('', '/v1/pets', signing.gateway.apiKey), { responses: 1 });
    const token = String(upstream.requests.at(-1)!.headers.authorization).replace(/^Bearer /, '');
    expect(token).toMatch(/^eyJ/);
    return { token, ...sent };
  }

  it('never reaches the client in a header, even an allowed one', async () => {
    const { token, text } = await echoed((token) =>
      answerWith(200, { 'X-Echo-Authorization': `Bearer ${token}`, ETag: `"${token}"`, 'Cache-Control': 'max-age=5' }),
    );
    expect(text).not.toContain(token);
    expect(headNames(text)).not.toContain('etag');
    expect(parseResponses(text)[0]!.headers['cache-control']).toBe('max-age=5');
  });

  it('never reaches the client in an Error body: the body is wrapped instead', async () => {
    const { token, text, statuses } = await echoed((token) =>
      answerWith(400, {}, JSON.stringify({ code: 'bad', message: `token ${token} lacks a scope`, status: 400 })),
    );
    expect(statuses).toEqual([400]);
    expect(text).not.toContain(token);
    expect(errorOf(text)).toEqual({ code: 'invalid_request', message: 'The pet store backend answered 400 Bad Request', status: 400 });
  });
});

describe('a header that may appear once, sent twice', () => {
  it.each([
    ['Host', 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nHost: y\r\nAuthorization: Bearer KEY\r\n\r\n'],
    ['Host', 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nhOST: x\r\nAuthorization: Bearer KEY\r\n\r\n'],
    ['Authorization', 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nAuthorization: Bearer psk_live_other\r\n\r\n'],
    ['Content-Type', 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\n\r\n'],
  ])('%s: 400 invalid_request naming it, before authentication, and nothing upstream', async (name, bytes) => {
    const before = upstream.requests.length;
    const sent = await sendRaw(edge.running.port, bytes.replace('KEY', key), { responses: 1 });
    expect(sent.statuses).toEqual([400]);
    expect(errorOf(sent.text)).toEqual({ code: 'invalid_request', message: `The request carries more than one ${name} header`, status: 400 });
    expect(upstream.requests.length).toBe(before);
  });

  it('Authorization, even without a valid key: 400, not 401', async () => {
    const sent = await sendRaw(edge.running.port, 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n', {
      responses: 1,
    });
    expect(sent.statuses).toEqual([400]);
  });

  it("Content-Length: refused by Node's parser as not valid HTTP/1.1, and the connection closes", async () => {
    const before = upstream.requests.length;
    const sent = await sendRaw(
      edge.running.port,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}`,
    );
    expect(sent.statuses).toEqual([400]);
    expect(errorOf(sent.text)).toEqual({ code: 'invalid_request', message: 'The request is not valid HTTP/1.1', status: 400 });
    expect(sent.closed).toBe(true);
    expect(upstream.requests.length).toBe(before);
  });

  it('closes the connection when refused while the body is still arriving', async () => {
    const sent = await sendRaw(
      edge.running.port,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n{"name":`,
      { waitMs: 1500 },
    );
    expect(sent.statuses).toEqual([400]);
    expect(parseResponses(sent.text)[0]!.headers.connection).toBe('close');
    expect(sent.closed).toBe(true);
  });
});

describe('a backend that answers 401 or 403', () => {
  it.each([
    [401, 'Unauthorized'],
    [403, 'Forbidden'],
  ])("%i: 502 upstream_refused_identity, without the backend's challenge or words", async (status, reason) => {
    answer = answerWith(status, { 'WWW-Authenticate': 'Bearer error="invalid_token"' }, JSON.stringify({ code: 'unauthorized', message: 'bad token', status }));
    const sent = await sendRaw(edge.running.port, get(), { responses: 1 });
    expect(sent.statuses).toEqual([502]);
    expect(headNames(sent.text)).not.toContain('www-authenticate');
    expect(errorOf(sent.text)).toEqual({
      code: 'upstream_refused_identity',
      message: `The pet store backend refused the gateway's request (${status} ${reason})`,
      status: 502,
    });
  });

  it('is counted by operation and status, and never opens the circuit', async () => {
    const refused = await startRecordingUpstream(answerWith(401, {}, ''));
    const strict = await startEdge(refused.baseUrl, { upstream: { circuitBreaker: { failureThreshold: 1, openMs: 60_000 } } });
    try {
      for (let i = 0; i < 3; i++) {
        const sent = await sendRaw(strict.running.port, get('', '/v1/pets', strict.gateway.apiKey), { responses: 1 });
        expect(sent.statuses).toEqual([502]);
      }
      expect(refused.requests.length).toBe(3);
      expect(await metric(strict.gateway, 'upstream_refused_identity_total', { operation: 'listPets', upstream_status: '401' })).toBe(3);
      expect(await metric(strict.gateway, 'upstream_circuit_open', {})).toBe(0);
    } finally {
      await strict.close();
      await refused.close();
    }
  });
});
