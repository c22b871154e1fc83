// RFC 7239 Forwarded values, row by row: the gateway appends its element only to one that parses.
import { describe, expect, it } from 'vitest';
import { isForwardedValue } from '../../../src/proxy/forwarded.ts';

describe('isForwardedValue', () => {
  it.each([
    ['one pair', 'for=192.0.2.43'],
    ['the RFC 7239 §4 examples', 'for="_gazonk"'],
    ['a quoted IPv6 node with a port', 'For="[2001:db8:cafe::17]:4711"'],
    ['pairs in one element', 'for=192.0.2.60;proto=http;by=203.0.113.43'],
    ['elements joined with OWS around the comma', 'for=192.0.2.43, for=198.51.100.17'],
    ['elements joined without OWS', 'for=192.0.2.43,for=198.51.100.17'],
    ['a tab as OWS', 'for=192.0.2.43\t,\tfor=198.51.100.17'],
    ['an extension parameter', 'for=192.0.2.43;secret=abc'],
    ['an escaped quote in a quoted-string', 'host="a\\"b"'],
    ['an empty quoted-string', 'for=""'],
    ['obs-text in a quoted-string', 'host="caf\u00e9"'],
    ['the same parameter in two elements', 'for=a, for=b'],
    ['a token value with every tchar', "for=!#$%&'*+-.^_`|~09AZaz"],
  ])('accepts %s', (_why, value) => {
    expect(isForwardedValue(value)).toBe(true);
  });

  it.each([
    ['an empty value', ''],
    ['a quote left open', 'for=1.2.3.4;host="x'],
    ['a quote opened inside a token', 'for=1.2.3.4;host=a"b'],
    ['an escape at the end of a quoted-string', 'for="1.2.3.4\\"'],
    ['a parameter twice in one element (§4)', 'for=1.2.3.4;for=5.6.7.8'],
    ['a parameter twice, in another case', 'for=1.2.3.4;FOR=5.6.7.8'],
    ['whitespace before a semicolon', 'for=1.2.3.4 ;proto=https'],
    ['whitespace after a semicolon', 'for=1.2.3.4; proto=https'],
    ['whitespace around the equals sign', 'for = 1.2.3.4'],
    ['a pair without a value', 'for='],
    ['a name without a value', 'for'],
    ['a value without a name', '=1.2.3.4'],
    ['an empty pair', 'for=a;;proto=http'],
    ['a trailing semicolon', 'for=a;'],
    ['an empty element', 'for=a,,for=b'],
    ['a trailing comma', 'for=1.2.3.4,'],
    ['a leading comma', ',for=1.2.3.4'],
    ['whitespace at the end', 'for=1.2.3.4 '],
    ['an unquoted IPv6 node', 'for=[2001:db8::1]'],
    ['a control character in a quoted-string', 'host="a\u0001b"'],
    ['a character outside Latin-1', 'host="\u2603"'],
  ])('refuses %s', (_why, value) => {
    expect(isForwardedValue(value)).toBe(false);
  });
});
