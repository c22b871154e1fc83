// Every Error the relay writes itself, and every one the gateway answers a failed exchange with, reaches the request record: the
// access line logs the code the client got.
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseResponses, sendRaw, startReadingUpstream } from '../helpers/raw-socket.ts';
import { startEdge } from '../helpers/start-edge.ts';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function answer(statusLine: string, contentType: string, body: string): string {
  return `HTTP/1.1 ${statusLine}\r\nContent-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

/** One keyed request through the gateway to a backend that answers it with `misbehave`: the Error the client got, and its access line. */
async function askOnce(misbehave: (socket: Socket) => void, requestId: string) {
  const upstream = await startReadingUpstream((request) => misbehave(request.socket));
  closers.push(() => upstream.close());
  const edge = await startEdge(upstream.baseUrl);
  closers.push(() => edge.close());
  const sent = await sendRaw(
    edge.running.port,
    `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${requestId}\r\nAuthorization: Bearer ${edge.gateway.apiKey}\r\n\r\n`,
    { responses: 1 },
  );
  const error: unknown = JSON.parse(parseResponses(sent.text)[0]!.body);
  const line = edge.gateway.logs.find((entry) => entry.reqId === requestId && entry.res !== undefined);
  return { error, line };
}

describe('an Error the relay writes', () => {
  it.each([
    ['a backend 401 (it refuses the gateway)', answer('401 Unauthorized', 'application/json', '{}'), 502, 'upstream_refused_identity'],
    ['a backend 403', answer('403 Forbidden', 'text/plain', 'no'), 502, 'upstream_refused_identity'],
    ['a backend 502 that is not an Error', answer('502 Bad Gateway', 'text/html', '<p>down</p>'), 502, 'bad_gateway'],
    ['a backend 500 that is not an Error', answer('500 Internal Server Error', 'text/plain', 'oops'), 500, 'upstream_error'],
  ])('%s: the client and the access line get one code', async (_name, bytes, status, code) => {
    const { error, line } = await askOnce((socket) => socket.write(bytes), 'relay-code-0001');
    expect(error).toMatchObject({ code, status });
    expect(line).toMatchObject({ res: { statusCode: status }, errorCode: code });
  });
});

describe('an Error the gateway writes for a failed exchange', () => {
  it.each([
    ['a backend that closes without answering', (socket: Socket) => socket.destroy()],
    [
      'a backend framing its answer by a coding other than chunked',
      (socket: Socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n'),
    ],
    ['a backend writing bytes that are not HTTP', (socket: Socket) => socket.write('zz\u0000\u00ff\r\n\r\n')],
  ])('%s: 502 bad_gateway, and the access line logs that code', async (_name, misbehave) => {
    const { error, line } = await askOnce(misbehave, 'failed-code-0001');
    expect(error).toMatchObject({ code: 'bad_gateway', status: 502 });
    expect(line).toMatchObject({ res: { statusCode: 502 }, errorCode: 'bad_gateway' });
  });
});
