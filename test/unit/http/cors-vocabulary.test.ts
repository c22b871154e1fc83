// Origins as browsers write them, and Vary fields merged without losing or repeating a name.
import { describe, expect, it } from 'vitest';
import { originProblem, withVary } from '../../../src/http/cors-vocabulary.ts';

describe('originProblem', () => {
  it.each(['https://shop.example', 'http://localhost:3000', 'http://127.0.0.1:8080', 'http://[::1]:5173', 'https://xn--bcher-kva.example'])(
    'accepts %s',
    (origin) => {
      expect(originProblem(origin)).toBeUndefined();
    },
  );

  it.each([
    ['https://shop.example/', 'must be written as a browser sends it (scheme://host[:port], lower case, no path, no default port): https://shop.example'],
    ['https://shop.example/app', 'must be written as a browser sends it (scheme://host[:port], lower case, no path, no default port): https://shop.example'],
    ['HTTPS://Shop.Example', 'must be written as a browser sends it (scheme://host[:port], lower case, no path, no default port): https://shop.example'],
    ['https://shop.example:443', 'must be written as a browser sends it (scheme://host[:port], lower case, no path, no default port): https://shop.example'],
    ['https://user@shop.example', 'must be written as a browser sends it (scheme://host[:port], lower case, no path, no default port): https://shop.example'],
    [
      'https://bücher.example',
      'must be written as a browser sends it (scheme://host[:port], lower case, no path, no default port): https://xn--bcher-kva.example',
    ],
    ['shop.example', 'must be an origin: scheme://host[:port]'],
    ['', 'must be an origin: scheme://host[:port]'],
    ['ftp://shop.example', 'must be an http:// or https:// origin'],
    ['null', 'null is the origin of sandboxed frames and file: pages, which any site can produce: list real origins'],
  ])('refuses %j: %s', (origin, problem) => {
    expect(originProblem(origin)).toBe(problem);
  });
});

describe('withVary', () => {
  it.each([
    [undefined, 'Origin', 'Origin'],
    ['', 'Origin', 'Origin'],
    ['Accept-Encoding', 'Origin', 'Accept-Encoding, Origin'],
    ['Origin', 'origin', 'Origin'],
    ['Origin', 'Accept-Encoding, Accept', 'Origin, Accept-Encoding, Accept'],
    [['Accept', 'Origin'], 'Accept-Language', 'Accept, Origin, Accept-Language'],
    ['Origin', ['accept', 'ORIGIN'], 'Origin, accept'],
    ['Origin', '*', '*'],
    ['*', 'Origin', '*'],
    ['Origin,, Accept ,', 'Accept', 'Origin, Accept'],
  ])('%j with %j is %j', (existing, added, merged) => {
    expect(withVary(existing, added)).toBe(merged);
  });
});
