// A Connection value's field names, read once for the value a peer sends every time.
import { expect, it } from 'vitest';
import { connectionTokenReader } from '../../../src/http/connection-tokens.ts';

it('lists the names lower-cased and trimmed, without empty ones or the ones left out', () => {
  const read = connectionTokenReader((name) => name !== 'content-type');
  expect([...read(' Keep-Alive ,,X-Trace, Content-Type')]).toEqual(['keep-alive', 'x-trace']);
});

it('reads each value for itself, one after another, the same set for the same value', () => {
  const read = connectionTokenReader();
  read('close, X-A');
  expect([[...read('X-B')], [...read('close, X-A')], [...read('X-B')]]).toEqual([['x-b'], ['close', 'x-a'], ['x-b']]);
  expect(read('X-B')).toBe(read('X-B'));
});
