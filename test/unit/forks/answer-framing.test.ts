// Where an answer ends, from the head in its first read: a Content-Length, a chunked body's start, or left to undici.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { answerFraming } from '../../../src/forks/answer-framing.ts';

const head = (status: string, fields: string) => `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\n${fields}\r\n`;

const LENGTH_5 = head('200 OK', 'Content-Length: 5\r\n');
const INTERIM = 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </pets.css>; rel=preload\r\n\r\n';
const CHUNKED = head('200 OK', 'Transfer-Encoding: chunked\r\n');
const CHUNKED_SPACED = head('200 OK', 'transfer-encoding:  Chunked \r\n');

describe('the framing of an answer', () => {
  it.each([
    ['a Content-Length', `${LENGTH_5}[1,2]`, { kind: 'length', end: LENGTH_5.length + 5 }],
    ['a Content-Length after interim answers', `${INTERIM}${LENGTH_5}[1,2]`, { kind: 'length', end: INTERIM.length + LENGTH_5.length + 5 }],
    ['chunked', `${CHUNKED}2\r\n[]`, { kind: 'chunked', bodyStart: CHUNKED.length }],
    ['chunked, in any case', CHUNKED_SPACED, { kind: 'chunked', bodyStart: CHUNKED_SPACED.length }],
    ['a head not yet whole', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n', { kind: 'unknown' }],
    ['another coding', head('200 OK', 'Transfer-Encoding: gzip, chunked\r\n'), { kind: 'unknown' }],
    ['chunked over two fields', head('200 OK', 'Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n'), { kind: 'unknown' }],
    ['chunked beside a Content-Length', head('200 OK', 'Transfer-Encoding: chunked\r\nContent-Length: 5\r\n'), { kind: 'unknown' }],
    ['two Content-Lengths', head('200 OK', 'Content-Length: 5\r\nContent-Length: 5\r\n'), { kind: 'unknown' }],
    ['a Content-Length that is no number', head('200 OK', 'Content-Length: 5x\r\n'), { kind: 'unknown' }],
    ['no framing field (read to the close)', head('200 OK', ''), { kind: 'unknown' }],
    ['a 204 (its connection closed by the relay)', head('204 No Content', 'Content-Length: 5\r\n'), { kind: 'unknown' }],
    ['a 101', 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n', { kind: 'unknown' }],
  ])('%s', (_name, bytes, framing) => {
    expect(answerFraming(Buffer.from(bytes, 'latin1'))).toEqual(framing);
  });
});

// The framing as regular expressions read it (the module before it read the status line and field values by character
// codes): the definition the module must agree with.
const STATUS = /^http\/1\.[01] (\d{3})[ \r]/;
const FIELD_VALUE = /^[ \t]*([^\r]*?)[ \t]*\r\n/;

function valueByExpression(head: string, line: string): string | undefined | null {
  const at = head.indexOf(line);
  if (at === -1) return undefined;
  const valueStart = at + line.length;
  if (head.indexOf(line, valueStart) !== -1) return null;
  return FIELD_VALUE.exec(head.slice(valueStart))?.[1] ?? null;
}

function framingByExpressions(first: Buffer): ReturnType<typeof answerFraming> {
  let start = 0;
  for (;;) {
    const headEnd = first.indexOf('\r\n\r\n', start, 'latin1');
    if (headEnd === -1) return { kind: 'unknown' };
    const bodyStart = headEnd + 4;
    const head = first.toString('latin1', start, headEnd + 2).toLowerCase();
    const status = Number(STATUS.exec(head.slice(0, 13))?.[1] ?? 0);
    if (status === 0 || status === 101) return { kind: 'unknown' };
    if (status < 200) {
      start = bodyStart;
      continue;
    }
    if (status === 204 || status === 304) return { kind: 'unknown' };
    const coding = valueByExpression(head, '\r\ntransfer-encoding:');
    const length = valueByExpression(head, '\r\ncontent-length:');
    if (coding !== undefined) return coding === 'chunked' && length === undefined ? { kind: 'chunked', bodyStart } : { kind: 'unknown' };
    if (length === undefined || length === null || !/^\d{1,15}$/.test(length)) return { kind: 'unknown' };
    return { kind: 'length', end: bodyStart + Number(length) };
  }
}

const statusLine = fc.oneof(
  fc.constantFrom('HTTP/1.1 200 OK', 'HTTP/1.0 200 OK', 'http/1.1 404 Not Found', 'HTTP/1.1 200', 'HTTP/1.1 100 Continue', 'HTTP/1.1 103 Early Hints'),
  fc.constantFrom('HTTP/1.1 204 No Content', 'HTTP/1.1 304 Not Modified', 'HTTP/1.1 101 Switching', 'HTTP/2.0 200 OK', 'HTTP/1.1 20 OK', 'HTTP/1.1 2000 OK'),
  fc.constantFrom('HTTP/1.1 2x0 OK', 'HTTP/1.1  200 OK', 'HTTP/1.2 200 OK', 'HTTP/1.1 200\tOK', 'HTTP/1.1 ', 'HTTP/1.1', 'XTTP/1.1 200 OK', ''),
);
const blank = fc.constantFrom('', ' ', '\t', '  ', ' \t');
const lengthValue = fc.oneof(
  fc.nat().map(String),
  fc.constantFrom('', '0', '007', '123456789012345', '1234567890123456', '5x', '-1', '+5', '1 2', '1\n2', '5\r'),
);
const field = fc.oneof(
  fc
    .tuple(fc.constantFrom('Content-Length', 'content-length', 'CONTENT-LENGTH', 'Content-Length '), blank, lengthValue, blank)
    .map(([name, before, value, after]) => `${name}:${before}${value}${after}\r\n`),
  fc
    .tuple(fc.constantFrom('Transfer-Encoding', 'transfer-encoding'), blank, fc.constantFrom('chunked', 'Chunked', 'gzip, chunked', 'chunked, gzip', ''), blank)
    .map(([name, before, value, after]) => `${name}:${before}${value}${after}\r\n`),
  fc.constantFrom('Content-Type: application/json\r\n', 'X-Length: 5\r\n', 'Link: </a>; rel=preload\r\n', 'Bare: cr\rhere\r\n'),
);
const answerHead = fc.tuple(statusLine, fc.array(field, { maxLength: 4 })).map(([line, fields]) => `${line}\r\n${fields.join('')}\r\n`);
const firstRead = fc
  .tuple(fc.array(answerHead, { minLength: 1, maxLength: 3 }), fc.constantFrom('', '[1,2]', '2\r\n[]'), fc.nat(200))
  .map(([heads, body, cut]) => {
    const bytes = heads.join('') + body;
    return cut < 20 ? bytes.slice(0, bytes.length - cut) : bytes;
  });

describe('the framing of an answer, read by character codes', () => {
  it('is what the regular expressions read, for generated heads', () => {
    fc.assert(
      fc.property(firstRead, (bytes) => {
        const first = Buffer.from(bytes, 'latin1');
        expect(answerFraming(first)).toEqual(framingByExpressions(first));
      }),
      { numRuns: 5000 },
    );
  });
});
