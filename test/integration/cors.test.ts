// CORS through the real composition root and a real upstream, byte for byte: preflights answered by the gateway, every answer to an allowed origin readable, the backend's CORS never relayed.
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildTestGateway } from '../helpers/build-test-app.ts';
import { parseExposition, seriesKey } from '../helpers/exposition.ts';
import { listen, rawRequest } from '../helpers/raw-request.ts';
import { parseResponses, sendRaw, startRecordingUpstream, type RecordedRequest, type RecordingUpstream } from '../helpers/raw-socket.ts';
import { startEdge, type Edge } from '../helpers/start-edge.ts';

const ALLOWED = 'http://shop.example:3000';
const OTHER = 'http://elsewhere.example';
// The gateway's own, then those the document declares: createPet's location, the catalog's and documents' etag.
const EXPOSED =
  'Access-Control-Expose-Headers: X-Request-Id, RateLimit, RateLimit-Policy, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Deprecation, Sunset, Link, API-Stability, Allow, WWW-Authenticate, location, etag';

type Answer = (req: RecordedRequest, res: ServerResponse) => void;
const answerWith =
  (status: number, headers: Record<string, string>, body = '[]'): Answer =>
  (_req, res) => {
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers, 'Content-Length': String(Buffer.byteLength(body)) });
    res.end(body);
  };

let answer: Answer;
let upstream: RecordingUpstream;
let edge: Edge;
/** The same gateway with CORS off. */
let plain: Edge;

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res) => answer(req, res));
  edge = await startEdge(upstream.baseUrl, {
    cors: { allowedOrigins: { production: [ALLOWED], staging: [OTHER] } },
    rateLimit: { limits: { production: { default: 600, createPet: 1 } } },
  });
  plain = await startEdge(upstream.baseUrl);
});
afterAll(async () => {
  await edge.close();
  await plain.close();
  await upstream.close();
});
beforeEach(() => {
  answer = answerWith(200, {});
});

/** One request's bytes: the request line, Host, these header lines, and a body when given. */
function request(method: string, path: string, lines: string[] = [], body?: string): string {
  const framing = body === undefined ? [] : [`Content-Length: ${Buffer.byteLength(body)}`];
  return [`${method} ${path} HTTP/1.1`, 'Host: gateway.example', ...lines, ...framing, '', body ?? ''].join('\r\n');
}

/** The one answer's status, its head lines as written (request id and date masked), and its body. */
async function exchange(bytes: string, port = edge.running.port): Promise<{ status: number; head: string[]; body: string }> {
  const sent = await sendRaw(port, bytes, { responses: 1 });
  const [response] = parseResponses(sent.text);
  const head = sent.text
    .slice(0, sent.text.indexOf('\r\n\r\n'))
    .split('\r\n')
    .slice(1)
    .map((line) => line.replace(/^(X-Request-Id|Date): .*/i, '$1: *'));
  return { status: response!.status, head, body: response!.body };
}

const corsLines = (head: readonly string[]) => head.filter((line) => /^(access-control-|vary:)/i.test(line));

describe('a preflight from an allowed origin', () => {
  const preflight = (path: string, method: string, origin = ALLOWED) =>
    request('OPTIONS', path, [`Origin: ${origin}`, `Access-Control-Request-Method: ${method}`, 'Access-Control-Request-Headers: authorization,content-type']);

  it('is answered 204 by the gateway, with what the path allows, without a key and without the backend', async () => {
    const before = upstream.requests.length;
    expect(await exchange(preflight('/v1/pets', 'POST'))).toEqual({
      status: 204,
      head: [
        'X-Request-Id: *',
        'Vary: Origin',
        `Access-Control-Allow-Origin: ${ALLOWED}`,
        EXPOSED,
        'Access-Control-Allow-Methods: GET, HEAD, POST',
        'Access-Control-Allow-Headers: authorization, content-type, x-request-id, traceparent, tracestate, baggage, if-match, if-none-match, if-modified-since, if-unmodified-since, cache-control, user-agent',
        'Access-Control-Max-Age: 600',
        'Date: *',
        'Connection: keep-alive',
        'Keep-Alive: timeout=5',
      ],
      body: '',
    });
    expect(upstream.requests.length).toBe(before);
  });

  it("lists the methods of the request's own path", async () => {
    const { status, head } = await exchange(preflight('/v1/pets/1', 'GET'));
    expect(status).toBe(204);
    expect(head).toContain('Access-Control-Allow-Methods: GET, HEAD');
  });

  it('is answered for HEAD where the path serves GET', async () => {
    expect((await exchange(preflight('/v1/pets/1', 'HEAD'))).status).toBe(204);
  });

  it('is not rate-limited: more preflights than the operation allows a key are all answered', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await exchange(preflight('/v1/pets', 'POST'))).status);
    expect(statuses).toEqual([204, 204, 204]);
  });

  it('gets a request id, a metric and an access log line like any request', async () => {
    const sent = await sendRaw(edge.running.port, preflight('/v1/pets', 'POST'), { responses: 1 });
    const requestId = parseResponses(sent.text)[0]!.headers['x-request-id'];
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    // The access log is written once the response has closed.
    await expect.poll(() => edge.gateway.logs.find((line) => line.reqId === requestId)).toBeDefined();
    expect(edge.gateway.logs.find((line) => line.reqId === requestId)).toMatchObject({
      req: { method: 'OPTIONS', path: '/v1/pets' },
      res: { statusCode: 204 },
      operation: null,
      errorCode: null,
    });
    const series = parseExposition(await edge.gateway.scrape());
    expect(
      series.get(seriesKey('petstore_gateway_requests_total', { operation: 'none', method: 'OPTIONS', status_code: '204', environment: 'production' })),
    ).toBeGreaterThan(0);
  });

  it.each([
    ['a method the path does not serve', '/v1/pets/1', 'DELETE'],
    ['a path the document lacks', '/v1/owners', 'GET'],
  ])('for %s gets the refusal any request would, readable by the page', async (_case, path, method) => {
    const { status, head, body } = await exchange(preflight(path, method));
    expect(status).toBe(401);
    expect(JSON.parse(body)).toMatchObject({ code: 'unauthorized', status: 401 });
    expect(corsLines(head)).toEqual(['Vary: Origin', `Access-Control-Allow-Origin: ${ALLOWED}`, EXPOSED]);
  });
});

describe('a preflight from any other origin', () => {
  it('gets the refusal any request would, with no Access-Control-* header', async () => {
    const before = upstream.requests.length;
    const { status, head, body } = await exchange(request('OPTIONS', '/v1/pets', [`Origin: ${OTHER}`, 'Access-Control-Request-Method: POST']));
    expect(status).toBe(401);
    expect(JSON.parse(body)).toMatchObject({ code: 'unauthorized' });
    expect(corsLines(head)).toEqual(['Vary: Origin']);
    expect(upstream.requests.length).toBe(before);
  });

  it('is not answered by the gateway when CORS is off', async () => {
    const { status, head } = await exchange(request('OPTIONS', '/v1/pets', [`Origin: ${ALLOWED}`, 'Access-Control-Request-Method: POST']), plain.running.port);
    expect(status).toBe(401);
    expect(corsLines(head)).toEqual([]);
  });
});

describe('an actual request from an allowed origin', () => {
  const key = () => `Authorization: Bearer ${edge.gateway.apiKey}`;

  it('can be read: the origin allowed, the headers scripts read exposed', async () => {
    const { status, head } = await exchange(request('GET', '/v1/pets', [`Origin: ${ALLOWED}`, key()]));
    expect(status).toBe(200);
    expect(head).toEqual([
      'X-Request-Id: *',
      'Vary: Origin',
      `Access-Control-Allow-Origin: ${ALLOWED}`,
      EXPOSED,
      'RateLimit: "listPets"; r=599; t=60',
      expect.stringMatching(/^RateLimit-Policy: "listPets"; q=600; w=60; pk=:[A-Za-z0-9+/=]+:$/),
      // The backend's, relayed as its upstream client reports them: lower case.
      'content-type: application/json',
      'content-length: 2',
      'date: *',
      'Connection: keep-alive',
      'Keep-Alive: timeout=5',
    ]);
  });

  it("merges the backend's Vary with Origin", async () => {
    answer = answerWith(200, { Vary: 'Accept-Encoding, origin' });
    expect(corsLines((await exchange(request('GET', '/v1/pets', [`Origin: ${ALLOWED}`, key()]))).head)).toEqual([
      'Vary: Origin, Accept-Encoding',
      `Access-Control-Allow-Origin: ${ALLOWED}`,
      EXPOSED,
    ]);
  });

  it("never relays the backend's own CORS headers", async () => {
    answer = answerWith(200, {
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Allow-Credentials': 'true',
      'Access-Control-Expose-Headers': 'X-Secret',
      'Access-Control-Max-Age': '86400',
    });
    expect(corsLines((await exchange(request('GET', '/v1/pets', [`Origin: ${ALLOWED}`, key()]))).head)).toEqual([
      'Vary: Origin',
      `Access-Control-Allow-Origin: ${ALLOWED}`,
      EXPOSED,
    ]);
  });

  it('is not told apart from a request without Origin by the backend: Origin is not forwarded', async () => {
    await exchange(request('GET', '/v1/pets', [`Origin: ${ALLOWED}`, key()]));
    expect(upstream.requests.at(-1)!.headers.origin).toBeUndefined();
  });
});

describe('refusals to an allowed origin', () => {
  const readable = ['Vary: Origin', `Access-Control-Allow-Origin: ${ALLOWED}`, EXPOSED];

  it.each([
    ['401 without a key', request('GET', '/v1/pets', [`Origin: ${ALLOWED}`]), 401, 'unauthorized'],
    ['404 outside the interface', request('GET', '/elsewhere', [`Origin: ${ALLOWED}`]), 404, 'not_found'],
    ['400 for an absolute-form target the gateway cannot serve', request('GET', '*', [`Origin: ${ALLOWED}`]), 400, 'invalid_request'],
  ])('carry the CORS headers: %s', async (_case, bytes, status, code) => {
    const answered = await exchange(bytes);
    expect([answered.status, JSON.parse(answered.body).code]).toEqual([status, code]);
    expect(corsLines(answered.head)).toEqual(readable);
  });

  it('carry the CORS headers: 400 for an invalid request', async () => {
    const answered = await exchange(request('GET', '/v1/pets?limit=many', [`Origin: ${ALLOWED}`, `Authorization: Bearer ${edge.gateway.apiKey}`]));
    expect([answered.status, JSON.parse(answered.body).code]).toEqual([400, 'invalid_request']);
    expect(corsLines(answered.head)).toEqual(readable);
  });

  it('carry the CORS headers: 429 with Retry-After and RateLimit, which the page can read', async () => {
    const key = edge.gateway.addKey();
    // Invalid requests count too (docs/reference.md, "Rate limits"): the first is refused 400, the second 429.
    const create = () => exchange(request('POST', '/v1/pets', [`Origin: ${ALLOWED}`, `Authorization: Bearer ${key}`, 'Content-Type: application/json'], '{}'));
    expect((await create()).status).toBe(400);
    const limited = await create();
    expect([limited.status, JSON.parse(limited.body).code]).toEqual([429, 'rate_limited']);
    expect(corsLines(limited.head)).toEqual(readable);
    expect(limited.head.filter((line) => /^(Retry-After|RateLimit):/.test(line))).toHaveLength(2);
  });

  it('carry the CORS headers: an upstream error turned into an Error body', async () => {
    answer = answerWith(500, {}, 'boom');
    const answered = await exchange(request('GET', '/v1/pets', [`Origin: ${ALLOWED}`, `Authorization: Bearer ${edge.gateway.apiKey}`]));
    expect([answered.status, JSON.parse(answered.body).code]).toEqual([500, 'upstream_error']);
    expect(corsLines(answered.head)).toEqual(readable);
  });
});

describe("'*': every origin", () => {
  it('is told * on preflights and answers alike, without Vary: Origin', async () => {
    const open = await startEdge(upstream.baseUrl, { cors: { allowedOrigins: { production: ['*'] } } });
    try {
      const preflight = await exchange(request('OPTIONS', '/v1/pets', [`Origin: ${OTHER}`, 'Access-Control-Request-Method: GET']), open.running.port);
      expect([preflight.status, ...corsLines(preflight.head)]).toEqual([
        204,
        'Access-Control-Allow-Origin: *',
        EXPOSED,
        'Access-Control-Allow-Methods: GET, HEAD, POST',
        expect.stringMatching(/^Access-Control-Allow-Headers: authorization, content-type, /),
        'Access-Control-Max-Age: 600',
      ]);
      const refused = await exchange(request('GET', '/v1/pets', [`Origin: ${OTHER}`]), open.running.port);
      expect([refused.status, ...corsLines(refused.head)]).toEqual([401, 'Access-Control-Allow-Origin: *', EXPOSED]);
    } finally {
      await open.close();
    }
  });
});

describe('the load-shedding 503, answered before the pipeline', () => {
  it('carries the CORS headers too, so a page can read its Retry-After', async () => {
    const held: ServerResponse[] = [];
    answer = (_req, res) => held.push(res);
    const busy = await startEdge(upstream.baseUrl, { listen: { maxInFlight: 1 }, cors: { allowedOrigins: { production: [ALLOWED] } } });
    try {
      const auth = `Authorization: Bearer ${busy.gateway.apiKey}`;
      const first = exchange(request('GET', '/v1/pets', [auth]), busy.running.port);
      await expect.poll(() => held.length).toBe(1);
      const shed = await exchange(request('GET', '/v1/pets', [`Origin: ${ALLOWED}`, auth]), busy.running.port);
      expect([shed.status, JSON.parse(shed.body).code]).toEqual([503, 'service_unavailable']);
      expect(corsLines(shed.head)).toEqual(['Vary: Origin', `Access-Control-Allow-Origin: ${ALLOWED}`, EXPOSED]);
      expect(shed.head).toContain('Retry-After: 1');
      held[0]!.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('[]');
      expect((await first).status).toBe(200);
    } finally {
      await busy.close();
    }
  });
});

describe('answers to any other origin, or none', () => {
  it.each([
    ['another origin', [`Origin: ${OTHER}`]],
    ['no Origin', []],
  ])('say Vary: Origin and nothing else of CORS: %s', async (_case, lines) => {
    const { status, head } = await exchange(request('GET', '/v1/pets', [...lines, `Authorization: Bearer ${edge.gateway.apiKey}`]));
    expect(status).toBe(200);
    expect(corsLines(head)).toEqual(['Vary: Origin']);
  });

  it("with CORS off say nothing of CORS, and still drop the backend's", async () => {
    answer = answerWith(200, { 'Access-Control-Allow-Origin': '*' });
    const { status, head } = await exchange(
      request('GET', '/v1/pets', [`Origin: ${ALLOWED}`, `Authorization: Bearer ${plain.gateway.apiKey}`]),
      plain.running.port,
    );
    expect(status).toBe(200);
    expect(corsLines(head)).toEqual([]);
  });
});

describe('a reload (SIGHUP)', () => {
  it('takes a changed list of origins up at the next request', async () => {
    let origins = [ALLOWED];
    const gateway = buildTestGateway({
      upstreamUrl: upstream.baseUrl,
      overrides: { cors: { allowedOrigins: { production: origins } } },
      reloadOverrides: () => ({ cors: { allowedOrigins: { production: origins } } }),
    });
    const server = await listen(gateway.app);
    try {
      const allowOrigin = async (origin: string) =>
        (await rawRequest(server.port, { path: '/v1/pets', headers: { Origin: origin, Authorization: `Bearer ${gateway.apiKey}` } })).headers[
          'access-control-allow-origin'
        ];
      expect([await allowOrigin(ALLOWED), await allowOrigin(OTHER)]).toEqual([ALLOWED, undefined]);
      origins = [OTHER];
      expect(await gateway.reload()).toMatchObject({ result: 'success', needRestart: [] });
      expect([await allowOrigin(ALLOWED), await allowOrigin(OTHER)]).toEqual([undefined, OTHER]);
    } finally {
      await server.close();
      await gateway.close();
    }
  });
});
