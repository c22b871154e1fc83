// Which backend answers refuse the gateway itself (its identity token), and which framings it cannot relay, row by row.
import { describe, expect, it } from 'vitest';
import { hasUndecodedTransferCoding, refusesTheGateway } from '../../../src/proxy/upstream-response.ts';

describe('refusesTheGateway', () => {
  it.each([
    [401, true],
    [403, true],
    [400, false],
    [404, false],
    [407, false],
    [500, false],
    [200, false],
  ])('a backend %i: %s', (status, expected) => {
    expect(refusesTheGateway(status)).toBe(expected);
  });
});

describe('hasUndecodedTransferCoding', () => {
  it.each<[string, string | string[] | undefined, boolean]>([
    ['no Transfer-Encoding', undefined, false],
    ['chunked', 'chunked', false],
    ['Chunked (coding names are case-insensitive)', 'Chunked', false],
    ['chunked with surrounding whitespace', ' chunked ', false],
    ['gzip, chunked', 'gzip, chunked', true],
    ['chunked, gzip', 'chunked, gzip', true],
    ['gzip alone', 'gzip', true],
    ['identity', 'identity', true],
    ['chunked, chunked', 'chunked, chunked', true],
    ['an unknown coding', 'x-pet-store', true],
    ['an empty value', '', true],
    ['chunked over two lines', ['chunked', 'chunked'], true],
    ['gzip then chunked over two lines', ['gzip', 'chunked'], true],
    ['chunked on one line of a repeated field', ['chunked'], true],
  ])('%s: %s', (_name, value, expected) => {
    expect(hasUndecodedTransferCoding(value === undefined ? {} : { 'transfer-encoding': value })).toBe(expected);
  });
});
