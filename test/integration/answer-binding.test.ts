// Answers bound to their requests: a backend that writes one stray complete response after an answer never hands a caller another's answer.
import { afterEach, describe, expect, it } from 'vitest';
import { type ReadRequest, startReadingUpstream } from '../helpers/raw-socket.ts';
import { type Edge, startEdge } from '../helpers/start-edge.ts';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A Pet list naming whom it was made for: a client reading someone else's name got another request's answer. */
function petList(madeFor: string): string {
  return JSON.stringify([{ id: 1, name: madeFor, categoryId: 1 }]);
}

function response(body: string, requestId: string | undefined): string {
  const echo = requestId === undefined ? '' : `X-Request-Id: ${requestId}\r\n`;
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${echo}Content-Length: ${body.length}\r\n\r\n${body}`;
}

/** The same answer framed by chunks: the body in two, then the last chunk with `trailers` (header lines, each ending CRLF). */
function chunkedResponse(body: string, requestId: string, trailers = ''): string {
  const half = Math.floor(body.length / 2);
  const chunks = `${half.toString(16)}\r\n${body.slice(0, half)}\r\n${(body.length - half).toString(16)};pet=1\r\n${body.slice(half)}\r\n0\r\n${trailers}\r\n`;
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-Id: ${requestId}\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}`;
}

function requestIdOf(request: ReadRequest): string {
  return /\r\nx-request-id: *([^\r]*)/i.exec(request.head)?.[1] ?? '';
}

/**
 * The hostile backend of the report: each request is answered at once (echoing its X-Request-Id when `echo`), and 15 ms later the
 * same connection gets one more complete 200, a valid Pet list naming "stray", without an id.
 */
async function startStrayWritingUpstream(echo: boolean) {
  let strays = 0;
  const upstream = await startReadingUpstream((request) => {
    const id = requestIdOf(request);
    request.socket.write(response(petList(id), echo ? id : undefined));
    setTimeout(() => {
      if (request.socket.destroyed) return;
      strays++;
      request.socket.write(response(petList('stray'), undefined));
    }, 15);
  });
  closers.push(() => upstream.close());
  return { upstream, strays: () => strays };
}

/** The gateway's count of upstream connections its stray-byte watch closed, by reason, as /metrics says. */
async function retiredCount(edge: Edge, reason: string): Promise<number> {
  const line = (await edge.gateway.scrape())
    .split('\n')
    .find((sample) => sample.startsWith('petstore_gateway_upstream_connections_retired_total{') && sample.includes(`reason="${reason}"`));
  return Number(line?.split(' ').at(-1));
}

interface Got {
  id: string;
  status: number;
  body: string;
}

/** Three keys calling in turn 0-8 ms apart, 100 calls in all; each call's own id and what it got. */
async function threeKeysCalling(edge: Edge, calls = 100): Promise<Got[]> {
  const keys = [edge.gateway.apiKey, edge.gateway.addKey(), edge.gateway.addKey()];
  const base = `http://127.0.0.1:${edge.running.port}/v1/pets`;
  const pending: Array<Promise<Got>> = [];
  for (let call = 0; call < calls; call++) {
    const id = `key${call % 3}-call-${String(call).padStart(4, '0')}`;
    pending.push(
      fetch(base, { headers: { authorization: `Bearer ${keys[call % 3]}`, 'x-request-id': id } }).then(async (answer) => ({
        id,
        status: answer.status,
        body: await answer.text(),
      })),
    );
    await new Promise((resolve) => setTimeout(resolve, (call * 7) % 9));
  }
  return Promise.all(pending);
}

const MISMATCH = {
  code: 'upstream_answer_mismatch',
  message: 'The pet store backend answered with an answer made for another request (its X-Request-Id); it was not relayed',
  status: 502,
};

describe.each(['off', 'enforce'])('a backend writing a stray response 15 ms after each answer (contract checks %s)', (mode) => {
  const contract = { contractResponses: { production: { mode, sample: 1 } } };

  it('auto, the backend echoing: no client gets an answer made for another request; the strays are refused', async () => {
    const { upstream, strays } = await startStrayWritingUpstream(true);
    const edge = await startEdge(upstream.baseUrl, contract);
    closers.push(() => edge.close());
    const got = await threeKeysCalling(edge);
    const summary = `backend wrote ${upstream.requests.length} answers and ${strays()} strays; clients got ${got.filter((g) => g.status === 200).length} × 200, ${got.filter((g) => g.status === 502).length} × 502`;
    for (const answer of got) {
      if (answer.status === 200) expect(JSON.parse(answer.body), summary).toEqual(JSON.parse(petList(answer.id)));
      else expect({ status: answer.status, body: JSON.parse(answer.body) }, summary).toEqual({ status: 502, body: MISMATCH });
    }
    const refused = got.filter((answer) => answer.status === 502).length;
    const counted = (await edge.gateway.scrape())
      .split('\n')
      .find((line) => line.startsWith('petstore_gateway_upstream_errors_total{') && line.includes('kind="answer_mismatch"'));
    expect(Number(counted?.split(' ').at(-1) ?? 0), summary).toBe(refused);
    // Every refusal is logged with its code, read from the request record.
    const refusedLines = edge.gateway.logs.filter((line) => (line.res as { statusCode?: number } | undefined)?.statusCode === 502);
    expect(refusedLines.length, summary).toBe(refused);
    expect(refusedLines.map((line) => [line.errorCode, line.upstreamFailure])).toEqual(refusedLines.map(() => ['upstream_answer_mismatch', 'answer_mismatch']));
  });
});

describe('upstream.requestIdEcho', () => {
  it('required, a backend that does not echo: every answer refused with the 502, none relayed', async () => {
    const { upstream, strays } = await startStrayWritingUpstream(false);
    const edge = await startEdge(upstream.baseUrl, { upstream: { requestIdEcho: 'required' } });
    closers.push(() => edge.close());
    const got = await threeKeysCalling(edge, 30);
    const summary = `backend wrote ${upstream.requests.length} answers and ${strays()} strays`;
    expect(
      got.map((answer) => ({ status: answer.status, body: JSON.parse(answer.body) })),
      summary,
    ).toEqual(got.map(() => ({ status: 502, body: MISMATCH })));
  });

  it('auto, a backend that does not echo: answers relayed (the stray class is then only closed by echoing or HTTP/2)', async () => {
    const upstream = await startReadingUpstream((request) => request.socket.write(response(petList(requestIdOf(request)), undefined)));
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl);
    closers.push(() => edge.close());
    const answer = await fetch(`http://127.0.0.1:${edge.running.port}/v1/pets`, {
      headers: { authorization: `Bearer ${edge.gateway.apiKey}`, 'x-request-id': 'quiet-0001' },
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(await answer.text())).toEqual(JSON.parse(petList('quiet-0001')));
  });

  it('auto: an answer carrying another id is refused even before the backend was seen to echo, and its connection is not reused', async () => {
    const upstream = await startReadingUpstream((request) => {
      const id = request.connection === 0 ? 'someone-else-0001' : requestIdOf(request);
      request.socket.write(response(petList(id), id));
    });
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl);
    closers.push(() => edge.close());
    const call = (id: string) =>
      fetch(`http://127.0.0.1:${edge.running.port}/v1/pets`, { headers: { authorization: `Bearer ${edge.gateway.apiKey}`, 'x-request-id': id } });
    const first = await call('first-0001');
    expect({ status: first.status, body: await first.json() }).toEqual({ status: 502, body: MISMATCH });
    const second = await call('second-0001');
    expect(await second.json()).toEqual(JSON.parse(petList('second-0001')));
    expect(upstream.requests.map((request) => request.connection)).toEqual([0, 1]);
  });

  it('off: the id is not looked at', async () => {
    const upstream = await startReadingUpstream((request) => request.socket.write(response(petList('any'), 'someone-else-0001')));
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl, { upstream: { requestIdEcho: 'off' } });
    closers.push(() => edge.close());
    const answer = await fetch(`http://127.0.0.1:${edge.running.port}/v1/pets`, { headers: { authorization: `Bearer ${edge.gateway.apiKey}` } });
    expect(answer.status).toBe(200);
  });
});

describe('bytes on an idle upstream connection', () => {
  it.each([
    ['a stray complete response', response(petList('stray'), undefined)],
    ['a stray byte', 'x'],
    ['a bare CRLF', '\r\n'],
    ['a few garbage bytes', 'zz\x00\xff'],
  ])('%s: the connection is never used again', async (_name, stray) => {
    const upstream = await startReadingUpstream((request) => {
      request.socket.write(response(petList(requestIdOf(request)), requestIdOf(request)));
      if (request.connection === 0) setTimeout(() => request.socket.write(stray), 15);
    });
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl);
    closers.push(() => edge.close());
    const call = (id: string) =>
      fetch(`http://127.0.0.1:${edge.running.port}/v1/pets`, { headers: { authorization: `Bearer ${edge.gateway.apiKey}`, 'x-request-id': id } });
    expect((await call('idle-0001')).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 60));
    const second = await call('idle-0002');
    expect(await second.json()).toEqual(JSON.parse(petList('idle-0002')));
    expect(upstream.requests.map((request) => request.connection)).toEqual([0, 1]);
    expect(await retiredCount(edge, 'idle_bytes')).toBe(1);
  });
});

describe('bytes around an answer, in the same write', () => {
  it.each([
    // Spaces past the end are no empty line: undici's parser fails on them and closes the connection before the watch would.
    ['a CRLF after the answer', 'bytes_after_answer', 1, (answer: string) => `${answer}\r\n`],
    ['a CRLF before the answer', 'answer_not_status_line', 1, (answer: string) => `\r\n${answer}`],
    ['a body longer than its Content-Length', 'bytes_after_answer', 0, (answer: string) => `${answer}  `],
  ])('%s: the answer is relayed, and its connection never used again (the watch retiring it for %s: %i)', async (_name, reason, retired, around) => {
    const upstream = await startReadingUpstream((request) => {
      const id = requestIdOf(request);
      const answer = response(petList(id), id);
      request.socket.write(request.connection === 0 ? around(answer) : answer);
    });
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl);
    closers.push(() => edge.close());
    const call = (id: string) =>
      fetch(`http://127.0.0.1:${edge.running.port}/v1/pets`, { headers: { authorization: `Bearer ${edge.gateway.apiKey}`, 'x-request-id': id } });
    const first = await call('around-0001');
    expect(await first.json()).toEqual(JSON.parse(petList('around-0001')));
    const second = await call('around-0002');
    expect(await second.json()).toEqual(JSON.parse(petList('around-0002')));
    expect(upstream.requests.map((request) => request.connection)).toEqual([0, 1]);
    expect(await retiredCount(edge, reason)).toBe(retired);
  });
});

describe('a chunked answer, then a CRLF in the same write', () => {
  it.each([
    ['after its last chunk', ''],
    ['after its trailers', 'Server-Timing: db;dur=3\r\nX-Checksum: 7\r\n'],
  ])('%s: the answer is relayed, and its connection never used again', async (_name, trailers) => {
    const upstream = await startReadingUpstream((request) => {
      const id = requestIdOf(request);
      const answer = chunkedResponse(petList(id), id, trailers);
      request.socket.write(request.connection === 0 ? `${answer}\r\n` : answer);
    });
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl);
    closers.push(() => edge.close());
    const call = (id: string) =>
      fetch(`http://127.0.0.1:${edge.running.port}/v1/pets`, { headers: { authorization: `Bearer ${edge.gateway.apiKey}`, 'x-request-id': id } });
    const first = await call('chunked-0001');
    expect(await first.json()).toEqual(JSON.parse(petList('chunked-0001')));
    const second = await call('chunked-0002');
    expect(await second.json()).toEqual(JSON.parse(petList('chunked-0002')));
    expect(upstream.requests.map((request) => request.connection)).toEqual([0, 1]);
    expect(await retiredCount(edge, 'bytes_after_answer')).toBe(1);
  });

  it('a chunked answer read over several writes, nothing after it: its connection is used again, and nothing is counted', async () => {
    const upstream = await startReadingUpstream((request) => {
      const id = requestIdOf(request);
      const answer = chunkedResponse(petList(id), id, 'X-Checksum: 7\r\n');
      const cut = answer.indexOf(';pet=1');
      request.socket.write(answer.slice(0, cut));
      setTimeout(() => request.socket.write(answer.slice(cut)), 10);
    });
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl);
    closers.push(() => edge.close());
    const call = (id: string) =>
      fetch(`http://127.0.0.1:${edge.running.port}/v1/pets`, { headers: { authorization: `Bearer ${edge.gateway.apiKey}`, 'x-request-id': id } });
    expect(await (await call('chunked-0003')).json()).toEqual(JSON.parse(petList('chunked-0003')));
    expect(await (await call('chunked-0004')).json()).toEqual(JSON.parse(petList('chunked-0004')));
    expect(upstream.requests.map((request) => request.connection)).toEqual([0, 0]);
    for (const reason of ['idle_bytes', 'bytes_after_answer', 'answer_not_status_line']) expect(await retiredCount(edge, reason), reason).toBe(0);
  });
});

describe.each([
  ['a stray complete response', response(petList('stray'), undefined)],
  ['a bare CRLF', '\r\n'],
  ['a few garbage bytes', 'zz\x00\xff'],
])('%s written 0-15 ms after every answer, three keys calling 0-8 ms apart (auto, the backend echoing)', (_name, stray) => {
  it('no client gets an answer made for another request, and no connection carries a request written after the stray reached it', async () => {
    /** Per connection: requests it carried, and how many arrived after its stray was written (at most the one already sent). */
    const carried = new Map<number, { requests: number; afterStray: number; strayWritten: boolean }>();
    let answered = 0;
    const upstream = await startReadingUpstream((request) => {
      const seen = carried.get(request.connection) ?? { requests: 0, afterStray: 0, strayWritten: false };
      carried.set(request.connection, seen);
      seen.requests++;
      if (seen.strayWritten) seen.afterStray++;
      const id = requestIdOf(request);
      request.socket.write(response(petList(id), id));
      setTimeout(
        () => {
          if (request.socket.destroyed || seen.strayWritten) return;
          seen.strayWritten = true;
          request.socket.write(stray);
        },
        (answered++ * 5) % 16,
      );
    });
    closers.push(() => upstream.close());
    const edge = await startEdge(upstream.baseUrl);
    closers.push(() => edge.close());
    const got = await threeKeysCalling(edge, 60);
    const connections = [...carried.values()];
    const summary = `${_name}: backend accepted ${connections.length} connections for ${upstream.requests.length} requests; clients got ${got.filter((g) => g.status === 200).length} × 200, ${got.filter((g) => g.status === 502).length} × 502`;
    for (const answer of got) {
      if (answer.status === 200) expect(JSON.parse(answer.body), summary).toEqual(JSON.parse(petList(answer.id)));
      else expect({ status: answer.status, code: JSON.parse(answer.body).code }, summary).toMatchObject({ status: 502 });
    }
    // A request the gateway wrote before the stray reached it may follow it; none after.
    expect(
      connections.filter((connection) => connection.afterStray > 1),
      `${summary}; ${JSON.stringify(connections)}`,
    ).toEqual([]);
  });
});
