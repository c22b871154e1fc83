// Strict JSON bodies and integer spellings, sent as exact bytes: what is refused never reaches the backend.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { listen } from '../helpers/raw-request.ts';
import { parseResponses, sendRaw, startRecordingUpstream, type RecordingUpstream } from '../helpers/raw-socket.ts';

let upstream: RecordingUpstream;
let gateway: TestGateway;
let server: { port: number; close(): Promise<void> };

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gateway = buildTestGateway({ upstreamUrl: upstream.baseUrl });
  server = await listen(gateway.app);
});
afterAll(async () => {
  await server.close();
  gateway.close();
  await upstream.close();
});

function request(method: string, path: string, body?: Buffer): Buffer {
  const head =
    `${method} ${path} HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer ${gateway.apiKey}\r\n` +
    (body ? `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n` : '') +
    'Connection: close\r\n\r\n';
  return Buffer.concat([Buffer.from(head, 'latin1'), body ?? Buffer.alloc(0)]);
}

async function expectRefused(bytes: Buffer, message: string): Promise<void> {
  const before = upstream.requests.length;
  const answer = await sendRaw(server.port, bytes, { responses: 1 });
  expect(answer.statuses).toEqual([400]);
  const [response] = parseResponses(answer.text);
  expect(response!.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(JSON.parse(response!.body)).toEqual({ code: 'invalid_request', message, status: 400 });
  expect(upstream.requests.length, 'the upstream received the request').toBe(before);
}

const utf8 = (text: string) => Buffer.from(text, 'utf8');

describe('createPet bodies that are refused with 400', () => {
  it.each([
    ['{"name":5,"categoryId":1,"name":"a"}', "Request body field 'name' must be given once"],
    ['{"name":"a","categoryId":1,"categoryId":2}', "Request body field 'categoryId' must be given once"],
    ['{"name":"a","categoryId":1,"owner":{"tags":[{"id":1,"id":1}]}}', "Request body field 'owner.tags.0.id' must be given once"],
    ['{"name":"a","\\u006eame":"b","categoryId":1}', "Request body field 'name' must be given once"],
    ['{"name":"a","categoryId":1e2}', "Request body field 'categoryId' must be written as a plain integer, not 1e2"],
    ['{"name":"a","categoryId":1.0}', "Request body field 'categoryId' must be written as a plain integer, not 1.0"],
    ['{"name":"a","categoryId":-0}', "Request body field 'categoryId' must be written as a plain integer, not -0"],
    ['{"name":"a","categoryId":4E+0}', "Request body field 'categoryId' must be written as a plain integer, not 4E+0"],
    ['{"name":"a","categoryId":1,"\\ud800":1}', 'Request body contains an unpaired surrogate escape'],
    [`{"name":"a","categoryId":1,"x":${'['.repeat(64)}${']'.repeat(64)}}`, 'Request body is nested more than 64 levels deep'],
    ['{"name":"a","categoryId":1,}', 'Request body is not valid JSON'],
  ])('%s', async (body, message) => {
    await expectRefused(request('POST', '/v1/pets', utf8(body)), message);
  });

  it.each([
    ['a byte that never occurs in UTF-8', Buffer.from('{"name":"\xff","categoryId":1}', 'latin1')],
    ['Latin-1 text', Buffer.from('{"name":"Zo\xeb","categoryId":1}', 'latin1')],
    ['an encoded surrogate', Buffer.concat([utf8('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), utf8('","categoryId":1}')])],
    ['an overlong encoding', Buffer.concat([utf8('{"name":"'), Buffer.from([0xc0, 0xaf]), utf8('","categoryId":1}')])],
  ])('%s', async (_case, body) => {
    await expectRefused(request('POST', '/v1/pets', body), 'Request body is not valid UTF-8');
  });

  it('a UTF-8 byte order mark', async () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), utf8('{"name":"a","categoryId":1}')]);
    await expectRefused(request('POST', '/v1/pets', body), 'Request body must not start with a byte order mark');
  });
});

describe('integer path and query parameters', () => {
  it('refuses petId -0', async () => {
    await expectRefused(request('GET', '/v1/pets/-0'), "Path parameter 'petId' must be an integer");
  });

  it('refuses limit=-0', async () => {
    await expectRefused(request('GET', '/v1/pets?limit=-0'), "Query parameter 'limit' must be an integer");
  });
});

describe('createPet bodies that are accepted', () => {
  it.each([
    ['non-ASCII text and the largest int64', utf8('{"name":"Zoë \\u00e9 🐶","categoryId":9223372036854775807,"status":"available"}')],
    ['1.0 where the schema sets no type (an extra member)', utf8('{"name":"a","categoryId":0,"weight":1.0,"tags":[1e2,-0]}')],
    ['the same name in different objects', utf8('{"name":"a","categoryId":-7,"owner":{"name":"b"}}')],
  ])('forwards %s byte for byte', async (_case, body) => {
    const before = upstream.requests.length;
    const answer = await sendRaw(server.port, request('POST', '/v1/pets', body), { responses: 1 });
    expect(answer.statuses).toEqual([200]); // the recording upstream's answer
    expect(upstream.requests.length).toBe(before + 1);
    expect(upstream.requests.at(-1)!.body.toString('hex')).toBe(body.toString('hex'));
  });
});
