// What a request's head says about its body, row by row: whether one is announced, still arriving, or awaits 100 Continue.
import { describe, expect, it } from 'vitest';
import { announcesBody, bodyStillArriving, expectsContinue } from '../../../src/http/framing.ts';

describe('announcesBody', () => {
  it.each([
    [{}, false],
    [{ 'content-length': '0' }, false],
    [{ 'content-length': '12' }, true],
    [{ 'transfer-encoding': 'chunked' }, true],
    [{ 'transfer-encoding': 'gzip, chunked', 'content-length': '0' }, true],
  ])('%o announces a body: %s', (headers, expected) => {
    expect(announcesBody(headers)).toBe(expected);
  });
});

describe('bodyStillArriving', () => {
  it.each([
    [{ 'content-length': '12' }, false, true],
    [{ 'content-length': '12' }, true, false],
    [{ 'transfer-encoding': 'chunked' }, false, true],
    [{}, false, false],
    [{ 'content-length': '0' }, false, false],
  ])('%o, complete: %s: still arriving: %s', (headers, complete, expected) => {
    expect(bodyStillArriving({ headers, complete })).toBe(expected);
  });
});

describe('expectsContinue', () => {
  it.each([
    ['1.1', '100-continue', true],
    ['1.1', ' 100-Continue ', true],
    ['1.1', undefined, false],
    ['1.1', 'something-else', false],
    ['1.0', '100-continue', false],
  ])('HTTP/%s with Expect: %s waits for 100 Continue: %s', (httpVersion, expect_, expected) => {
    expect(expectsContinue({ httpVersion, headers: expect_ === undefined ? {} : { expect: expect_ } })).toBe(expected);
  });
});
