// The backend's answers checked against the document: a real backend serving each kind of violation, under report and enforce.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parse, stringify } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { parseResponses, sendRaw, startReadingUpstream, type ReadRequest } from '../helpers/raw-socket.ts';
import { buildTestGateway } from '../helpers/build-test-app.ts';
import { startEdge, type Edge } from '../helpers/start-edge.ts';

const PETS = '[{"id":1,"name":"Rex","categoryId":2,"status":"available"}]';
const OFF_SHAPE = '[{"id":"1","name":"Rex","categoryId":2}]';
const VIOLATION = {
  code: 'upstream_contract_violation',
  message: 'The pet store backend answered outside the interface; the answer was not relayed',
  status: 502,
};

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A raw answer: the status line and fields as written, and a body framed by Content-Length. */
function answer(statusLine: string, fields: readonly string[], body: string | Buffer): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const head = [`HTTP/1.1 ${statusLine}`, ...fields, `Content-Length: ${bytes.length}`, '', ''].join('\r\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), bytes]);
}
const json = (statusLine: string, body: string, fields: readonly string[] = []) => answer(statusLine, ['Content-Type: application/json', ...fields], body);

type Mode = 'off' | 'report' | 'enforce';

/** A backend answering every request with `reply`, and a gateway in front of it checking every answer under `mode`. */
async function gatewayInFront(mode: Mode, reply: (request: ReadRequest) => Buffer | string, maxBodyBytes?: number) {
  const upstream = await startReadingUpstream((request) => request.socket.write(reply(request)));
  closers.push(() => upstream.close());
  const edge = await startEdge(upstream.baseUrl, {
    contractResponses: { production: { mode, sample: 1 }, ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }) },
  });
  closers.push(() => edge.close());
  return { upstream, edge };
}

function get(edge: Edge, target: string, id: string, method = 'GET'): string {
  return `${method} ${target} HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${id}\r\nAuthorization: Bearer ${edge.gateway.apiKey}\r\n\r\n`;
}

/** The access line of one request. */
function accessLine(edge: Edge, id: string): Record<string, unknown> {
  const line = edge.gateway.logs.find((entry) => entry.reqId === id);
  if (line === undefined) throw new Error(`no access line for ${id}`);
  return line;
}

async function metric(edge: Edge, series: string): Promise<number> {
  const text = await edge.gateway.scrape();
  const line = text.split('\n').find((row) => row.startsWith(`${series} `));
  return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
}

const violations = (operation: string, statusClass: string, kind: string) =>
  `petstore_gateway_upstream_contract_violations_total{operation="${operation}",status_class="${statusClass}",kind="${kind}",environment="production"}`;
const checks = (operation: string, statusClass: string) =>
  `petstore_gateway_upstream_contract_checks_total{operation="${operation}",status_class="${statusClass}",environment="production"}`;

/** Each kind of violation a backend can commit on listPets, the answer that commits it, and what the log says of it. */
const OFF_CONTRACT: ReadonlyArray<{ name: string; bytes: Buffer; statusClass: string; logged: Record<string, unknown> }> = [
  {
    name: 'a Pet without categoryId',
    bytes: json('200 OK', '[{"id":1,"name":"Rex"}]'),
    statusClass: '2xx',
    logged: { kind: 'body_schema', response: '200', pointer: '/0/categoryId', keyword: 'required' },
  },
  {
    name: 'a status outside PetStatus',
    bytes: json('200 OK', '[{"id":1,"name":"Rex","categoryId":2,"status":"lost"}]'),
    statusClass: '2xx',
    logged: { kind: 'body_schema', response: '200', pointer: '/0/status', keyword: 'enum' },
  },
  {
    name: 'an id as a string',
    bytes: json('200 OK', '[{"id":"1","name":"Rex","categoryId":2}]'),
    statusClass: '2xx',
    logged: { kind: 'body_schema', response: '200', pointer: '/0/id', keyword: 'type' },
  },
  {
    name: 'an id beyond int64',
    bytes: json('200 OK', '[{"id":9223372036854775808,"name":"Rex","categoryId":2}]'),
    statusClass: '2xx',
    logged: { kind: 'body_schema', response: '200', pointer: '/0/id', keyword: 'format' },
  },
  {
    name: 'a media type the document does not declare',
    bytes: answer('200 OK', ['Content-Type: text/html'], '<p>pets</p>'),
    statusClass: '2xx',
    logged: { kind: 'media_type', response: '200', pointer: '', keyword: 'content' },
  },
  {
    name: 'a lying media type (JSON declared, not JSON sent)',
    bytes: json('200 OK', '[{"id":1,'),
    statusClass: '2xx',
    logged: { kind: 'unparseable_body', response: '200', pointer: '', keyword: 'json' },
  },
  {
    name: 'a member named twice',
    bytes: json('200 OK', '[{"id":1,"id":2,"name":"Rex","categoryId":2}]'),
    statusClass: '2xx',
    logged: { kind: 'unparseable_body', response: '200', pointer: '', keyword: 'json' },
  },
  {
    name: "an Error whose status is not the answer's",
    bytes: json('404 Not Found', '{"code":"not_found","message":"no pets","status":400}'),
    statusClass: '4xx',
    logged: { kind: 'error_status_mismatch', response: 'default', pointer: '/status', keyword: 'const' },
  },
  {
    name: 'a 429 without the Retry-After the document requires',
    bytes: json('429 Too Many Requests', '{"code":"rate_limited","message":"slow down","status":429}'),
    statusClass: '4xx',
    logged: { kind: 'missing_header', response: '429', pointer: '', keyword: 'required', header: 'retry-after' },
  },
];

describe('enforce: an answer that breaks the document is never relayed', () => {
  it.each(OFF_CONTRACT)('$name: one 502 upstream_contract_violation, the connection kept', async ({ bytes }) => {
    const { edge } = await gatewayInFront('enforce', (request) => (request.target.includes('limit=1') ? json('200 OK', PETS) : bytes));
    const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0001') + get(edge, '/v1/pets?limit=1', 'contract-0002'), {
      responses: 2,
    });
    expect(sent.statuses).toEqual([502, 200]);
    expect(sent.closed).toBe(false);
    const [refused, next] = parseResponses(sent.text);
    expect(JSON.parse(refused!.body)).toEqual(VIOLATION);
    expect(refused!.headers).toMatchObject({ 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'contract-0001' });
    expect(next!.body).toBe(PETS);
  });

  it.each(OFF_CONTRACT)('$name: counted by kind and logged with its pointer and keyword, no value of the body', async ({ bytes, statusClass, logged }) => {
    const { edge } = await gatewayInFront('enforce', () => bytes);
    await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0003'), { responses: 1 });
    expect(await metric(edge, violations('listPets', statusClass, String(logged.kind)))).toBe(1);
    expect(await metric(edge, checks('listPets', statusClass))).toBe(1);
    const line = accessLine(edge, 'contract-0003');
    expect(line.contractViolation).toEqual({ ...logged, enforced: true });
    expect(line.errorCode).toBe('upstream_contract_violation');
    expect(edge.gateway.rawLogs()).not.toContain('Rex');
  });

  it('refuses an undeclared status at its head and does not reuse that upstream connection', async () => {
    const upstream = await startReadingUpstream((request) =>
      request.socket.write(request.connection === 0 ? answer('299 Odd', ['Content-Type: application/json'], PETS) : json('200 OK', PETS)),
    );
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl, { contract: documentWithoutDefault(), contractResponses: { production: { mode: 'enforce' } } });
    closers.push(() => edge.close());
    const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0004') + get(edge, '/v1/pets', 'contract-0014'), { responses: 2 });
    expect(sent.statuses).toEqual([502, 200]);
    expect(accessLine(edge, 'contract-0004').contractViolation).toEqual({
      kind: 'undeclared_status',
      response: null,
      pointer: '',
      keyword: 'responses',
      enforced: true,
    });
    expect(upstream.requests.map((request) => request.connection)).toEqual([0, 1]);
  });

  it.each([
    ['201 Created', [], PETS],
    ['204 No Content', [], ''],
    ['304 Not Modified', [], ''],
    ['999 Odd', ['Content-Type: application/json'], PETS],
  ])('refuses %s, which only `default` would cover (defaultCovers unset: errors under enforce)', async (statusLine, fields, body) => {
    const { edge } = await gatewayInFront('enforce', (request) =>
      request.target.includes('limit=1') ? json('200 OK', PETS) : answer(statusLine, ['Content-Type: application/json', ...fields].slice(0, 1), body),
    );
    const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0021') + get(edge, '/v1/pets?limit=1', 'contract-0022'), {
      responses: 2,
    });
    expect(sent.statuses).toEqual([502, 200]);
    expect(accessLine(edge, 'contract-0021')).toMatchObject({
      errorCode: 'upstream_contract_violation',
      contractViolation: { kind: 'undeclared_status', response: null, enforced: true },
    });
  });

  it('relays a 201 under `default` when defaultCovers is all', async () => {
    // `default` declares the Error body: the answer keeps it, and only its status is in question.
    const upstream = await startReadingUpstream((request) => request.socket.write(json('201 Created', '{"code":"created","message":"made","status":201}')));
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl, { contractResponses: { production: { mode: 'enforce' }, defaultCovers: 'all' } });
    closers.push(() => edge.close());
    const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0023'), { responses: 1 });
    expect(sent.statuses).toEqual([201]);
  });

  it('relays a body over maxBodyBytes unchecked, counted as too_large', async () => {
    const { edge } = await gatewayInFront('enforce', () => json('200 OK', '[{"id":1,"name":"Rex"}]'), 8);
    const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0005'), { responses: 1 });
    expect(sent.statuses).toEqual([200]);
    expect(parseResponses(sent.text)[0]!.body).toBe('[{"id":1,"name":"Rex"}]');
    expect(await metric(edge, 'petstore_gateway_upstream_contract_unchecked_total{operation="listPets",reason="too_large",environment="production"}')).toBe(1);
    expect(await metric(edge, checks('listPets', '2xx'))).toBe(0);
  });

  it('decodes a gzip body to check it', async () => {
    const { edge } = await gatewayInFront('enforce', () =>
      answer('200 OK', ['Content-Type: application/json', 'Content-Encoding: gzip'], gzipSync('[{"id":"1","name":"Rex","categoryId":2}]')),
    );
    const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0006'), { responses: 1 });
    expect(sent.statuses).toEqual([502]);
    expect(accessLine(edge, 'contract-0006').contractViolation).toMatchObject({ kind: 'body_schema', pointer: '/0/id' });
  });

  it.each([
    ['a coding it cannot decode', ['Content-Encoding: compress'], Buffer.from('xyz')],
    ['three codings stacked', ['Content-Encoding: gzip, gzip, gzip'], gzipSync(gzipSync(gzipSync(PETS)))],
  ])('refuses a body in %s: counted unchecked as encoding, answered 502 upstream_contract_violation', async (_name, fields, bytes) => {
    const { edge } = await gatewayInFront('enforce', () => answer('200 OK', ['Content-Type: application/json', ...fields], bytes));
    const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0007'), { responses: 1 });
    expect(sent.statuses).toEqual([502]);
    expect(JSON.parse(parseResponses(sent.text)[0]!.body)).toEqual(VIOLATION);
    expect(await metric(edge, 'petstore_gateway_upstream_contract_unchecked_total{operation="listPets",reason="encoding",environment="production"}')).toBe(1);
    expect(accessLine(edge, 'contract-0007').errorCode).toBe('upstream_contract_violation');
  });

  it.each([
    ['gzip, gzip', ['Content-Encoding: gzip, gzip'], gzipSync(gzipSync(OFF_SHAPE))],
    ['identity, identity', ['Content-Encoding: identity, identity'], Buffer.from(OFF_SHAPE)],
    ['two Content-Encoding lines', ['Content-Encoding: gzip', 'Content-Encoding: gzip'], gzipSync(gzipSync(OFF_SHAPE))],
  ])('decodes stacked or repeated codings in order (%s) and refuses the body under them', async (_name, fields, bytes) => {
    const { edge } = await gatewayInFront('enforce', () => answer('200 OK', ['Content-Type: application/json', ...fields], bytes));
    const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0017'), { responses: 1 });
    expect(sent.statuses).toEqual([502]);
    expect(accessLine(edge, 'contract-0017').contractViolation).toMatchObject({ kind: 'body_schema', pointer: '/0/id' });
  });

  it('relays gzip, gzip over a body that keeps the document, bytes as they came', async () => {
    const bytes = gzipSync(gzipSync(PETS));
    const { edge } = await gatewayInFront('enforce', () => answer('200 OK', ['Content-Type: application/json', 'Content-Encoding: gzip, gzip'], bytes));
    const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0018'), { responses: 1 });
    expect(sent.statuses).toEqual([200]);
    expect(await metric(edge, checks('listPets', '2xx'))).toBe(1);
  });

  it("checks a HEAD answer's status and headers only", async () => {
    const { edge } = await gatewayInFront('enforce', () => answer('200 OK', ['Content-Type: text/html'], ''));
    const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0008', 'HEAD'), { responses: 1 });
    expect(sent.statuses).toEqual([200]);
    expect(await metric(edge, checks('listPets', '2xx'))).toBe(1);
  });
});

describe('report: an answer that breaks the document is relayed as it came, then counted and logged', () => {
  it.each(OFF_CONTRACT)('$name', async ({ bytes, statusClass, logged }) => {
    const { edge: reporting } = await gatewayInFront('report', () => bytes);
    const { edge: unchecked } = await gatewayInFront('off', () => bytes);
    const [seen, plain] = await Promise.all([
      sendRaw(reporting.running.port, get(reporting, '/v1/pets', 'contract-0010'), { responses: 1 }),
      sendRaw(unchecked.running.port, get(unchecked, '/v1/pets', 'contract-0010'), { responses: 1 }),
    ]);
    expect(withoutDate(seen.text)).toBe(withoutDate(plain.text));
    expect(await metric(reporting, violations('listPets', statusClass, String(logged.kind)))).toBe(1);
    expect(accessLine(reporting, 'contract-0010').contractViolation).toEqual({ ...logged, enforced: false });
    expect(accessLine(unchecked, 'contract-0010').contractViolation).toBeUndefined();
  });

  it.each([
    ['report', 'streams the first part to the client while the backend holds the rest back', true],
    ['enforce', 'holds the answer back until the backend has finished it', false],
  ] as const)('%s %s', async (mode, _what, streamed) => {
    const head = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
    const first = '[{"id":1,"name":"Rex","categoryId":2}';
    // The backend sends the first part of its answer and holds the rest back.
    const upstream = await startReadingUpstream((request) => request.socket.write(`${head}${first.length.toString(16)}\r\n${first}\r\n`));
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl, { contractResponses: { production: { mode, sample: 1 } } });
    closers.push(() => edge.close());
    const early = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0011'), { waitMs: 500 });
    expect(early.text.includes(first)).toBe(streamed);
  });
});

describe('the mode', () => {
  it('is taken up by a configuration reload, at the next request', async () => {
    const upstream = await startReadingUpstream((request) => request.socket.write(json('200 OK', '[{"id":"1"}]')));
    closers.push(() => upstream.close());
    let mode: Mode = 'off';
    const gateway = buildTestGateway({
      upstreamUrl: upstream.baseUrl,
      env: { PORT: '0', ADMIN_PORT: '0' },
      reloadOverrides: () => ({ contractResponses: { production: { mode } } }),
      overrides: { contractResponses: { production: { mode: 'off' } } },
    });
    const running = await gateway.listen();
    closers.push(async () => {
      await running.shutdown('test over');
      gateway.close();
    });
    const ask = (id: string) => sendRaw(running.port, get({ gateway } as Edge, '/v1/pets', id), { responses: 1 });
    expect((await ask('contract-0030')).statuses).toEqual([200]);
    mode = 'enforce';
    expect(await gateway.reload()).toMatchObject({ result: 'success' });
    expect((await ask('contract-0031')).statuses).toEqual([502]);
  });

  it('counts on the replica that checked: two replicas in front of one backend add up to every answer', async () => {
    const upstream = await startReadingUpstream((request) => request.socket.write(json('200 OK', '[{"id":1,"name":"Rex"}]')));
    closers.push(() => upstream.close());
    const replicas: Edge[] = [];
    for (let index = 0; index < 2; index++) {
      const edge = await startEdge(upstream.baseUrl, { contractResponses: { production: { mode: 'report', sample: 1 } } });
      closers.push(() => edge.close());
      replicas.push(edge);
    }
    // Five requests, spread as a load balancer would: 0, 1, 0, 1, 0.
    for (let index = 0; index < 5; index++) {
      const edge = replicas[index % 2]!;
      await sendRaw(edge.running.port, get(edge, '/v1/pets', `contract-004${index}`), { responses: 1 });
    }
    const series = violations('listPets', '2xx', 'body_schema');
    expect([await metric(replicas[0]!, series), await metric(replicas[1]!, series)]).toEqual([3, 2]);
    expect(upstream.requests).toHaveLength(5);
  });
});

describe('a valid answer', () => {
  it.each([
    ['framed by Content-Length', json('200 OK', PETS, ['ETag: "v1"'])],
    [
      'chunked',
      Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${PETS.length.toString(16)}\r\n${PETS}\r\n0\r\n\r\n`),
    ],
  ])('%s: byte-identical under off, report and enforce (but Date)', async (_name, bytes) => {
    const texts: string[] = [];
    for (const mode of ['off', 'report', 'enforce'] as const) {
      const { edge } = await gatewayInFront(mode, () => bytes);
      const sent = await sendRaw(edge.running.port, get(edge, '/v1/pets', 'contract-0020'), { responses: 1 });
      texts.push(withoutDate(sent.text));
    }
    expect(texts[1]).toBe(texts[0]);
    expect(texts[2]).toBe(texts[0]);
    expect(parseResponses(texts[0]!)[0]!.body).toBe(PETS);
  });
});

/** The interface document with listPets' `default` response taken out, so that a status it does not list is undeclared. */
function documentWithoutDefault(): string {
  const document = parse(readFileSync(new URL('../../config/petstore.openapi.yaml', import.meta.url), 'utf8')) as {
    paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  };
  delete document.paths['/pets']!.get!.responses.default;
  const file = join(mkdtempSync(join(tmpdir(), 'contract-')), 'petstore.openapi.yaml');
  writeFileSync(file, stringify(document));
  return file;
}

function withoutDate(text: string): string {
  return text.replace(/\r\nDate: [^\r]*/g, '');
}
