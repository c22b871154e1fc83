// An upstream answer framed by a transfer coding other than `chunked` alone: one 502 Error, nothing of its body, a fresh upstream connection.
import { afterEach, describe, expect, it } from 'vitest';
import { parseResponses, sendRaw, startReadingUpstream } from '../helpers/raw-socket.ts';
import { startEdge } from '../helpers/start-edge.ts';

/** What undici hands over undecoded (or reads until the close) is framed around this: it must never reach the client. */
const BAD_BODY = 'BAD-BODY-BYTES';
const GOOD_BODY = '[{"id":1,"name":"good","categoryId":1}]';
const PROTOCOL_ERROR = { code: 'bad_gateway', message: 'The pet store backend answered with something other than an HTTP response', status: 502 };

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * An upstream that answers the first request on its first connection with `badHead` and a chunk-framed
 * body, keeping that connection open (so a gateway reading to the close would hang), and every other
 * request with a good answer; a gateway in front of it; two requests pipelined on one client connection.
 */
async function pipelineThroughBadAnswer(badHead: string) {
  const upstream = await startReadingUpstream((request) => {
    if (request.connection === 0) {
      request.socket.write(`${badHead}\r\n${BAD_BODY.length.toString(16)}\r\n${BAD_BODY}\r\n0\r\n\r\n`);
      return;
    }
    request.socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${GOOD_BODY.length}\r\n\r\n${GOOD_BODY}`);
  });
  closers.push(() => upstream.close());
  const edge = await startEdge(upstream.baseUrl);
  closers.push(() => edge.close());
  const request = (id: string) => `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${id}\r\nAuthorization: Bearer ${edge.gateway.apiKey}\r\n\r\n`;
  const answer = await sendRaw(edge.running.port, request('coding-0001') + request('coding-0002'), { responses: 2 });
  return { answer, upstream, edge };
}

describe('an upstream answer with a transfer coding other than chunked alone', () => {
  it.each([
    ['gzip, chunked', 'Transfer-Encoding: gzip, chunked'],
    ['chunked, gzip', 'Transfer-Encoding: chunked, gzip'],
    ['gzip alone', 'Transfer-Encoding: gzip'],
    ['identity', 'Transfer-Encoding: identity'],
    ['chunked, chunked', 'Transfer-Encoding: chunked, chunked'],
    ['an unknown coding', 'Transfer-Encoding: x-pet-store'],
    ['the field over two lines', 'Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked'],
    ['chunked twice over two lines', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked'],
  ])('%s: one 502 Error, none of its body, the upstream connection closed, the client connection kept', async (_name, field) => {
    const { answer, upstream } = await pipelineThroughBadAnswer(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${field}\r\nConnection: keep-alive\r\n`);
    expect(answer.statuses).toEqual([502, 200]);
    expect(answer.closed).toBe(false);
    expect(answer.text).not.toContain(BAD_BODY);
    const [refused, next] = parseResponses(answer.text);
    expect(JSON.parse(refused!.body)).toEqual(PROTOCOL_ERROR);
    expect(refused!.headers).toMatchObject({ 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'coding-0001' });
    expect(refused!.headers['transfer-encoding']).toBeUndefined();
    expect(next!.headers['x-request-id']).toBe('coding-0002');
    expect(next!.body).toBe(GOOD_BODY);
    // The second request went on a new connection: the first, whose framing is lost, was not reused.
    expect(upstream.requests.map((request) => request.connection)).toEqual([0, 1]);
    expect(upstream.requests[0]!.socket.destroyed || upstream.requests[0]!.socket.readableEnded).toBe(true);
  });

  it('an error answer too: 502, not the backend 404 relayed or wrapped', async () => {
    const { answer } = await pipelineThroughBadAnswer('HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked, gzip\r\n');
    expect(answer.statuses).toEqual([502, 200]);
    expect(answer.text).not.toContain(BAD_BODY);
    expect(JSON.parse(parseResponses(answer.text)[0]!.body)).toEqual(PROTOCOL_ERROR);
  });

  it('is logged and counted as a protocol failure, without the upstream bytes', async () => {
    const { edge } = await pipelineThroughBadAnswer('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n');
    const line = edge.gateway
      .rawLogs()
      .split('\n')
      .find((entry) => entry.includes('"coding-0001"'));
    expect(line).toContain('"upstreamFailure":"protocol"');
    expect(line).toContain('the answer is framed by a transfer coding other than chunked alone');
    expect(line).not.toContain('gzip');
    const counted = (await edge.gateway.scrape())
      .split('\n')
      .filter((entry) => /^petstore_gateway_upstream_errors_total\{.*kind="protocol"/.test(entry) && entry.includes('operation="listPets"'));
    expect(counted).toHaveLength(1);
    expect(counted[0]).toMatch(/ 1$/);
  });

  it('chunked alone is relayed, and its connection reused', async () => {
    const { answer, upstream } = await pipelineThroughBadAnswer('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: Chunked\r\n');
    expect(answer.statuses).toEqual([200, 200]);
    expect(parseResponses(answer.text)[0]!.body).toBe(BAD_BODY);
    expect(upstream.requests.map((request) => request.connection)).toEqual([0, 0]);
  });
});
