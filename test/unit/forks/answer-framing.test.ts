// Where an answer ends, from the head in its first read: a Content-Length, a chunked body's start, or left to undici.
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
