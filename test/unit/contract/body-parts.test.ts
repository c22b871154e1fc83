// A body read as the parts it arrived in: validity as UTF-8 and its first bytes, the same as read joined.
import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isUtf8Parts, prefixOf } from '../../../src/contract/body-parts.ts';

/** `bytes` cut at `cuts` (positions, in any order, repeats allowed: empty parts). */
function split(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [0, ...cuts.map((cut) => cut % (bytes.length + 1)).sort((a, b) => a - b), bytes.length];
  return at.slice(1).map((end, index) => bytes.subarray(at[index], end));
}

describe('isUtf8Parts', () => {
  it('is what isUtf8 says of the parts joined, wherever they are cut, characters of every length across the cuts', () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 }).map((value) => new Uint8Array(Buffer.from(value, 'utf8')));
    const bytes = fc.oneof(
      text,
      fc.uint8Array({ maxLength: 40 }),
      fc.tuple(text, fc.uint8Array({ maxLength: 3 }), text).map((three) => Buffer.concat(three)),
    );
    fc.assert(
      fc.property(bytes, fc.array(fc.nat(), { maxLength: 6 }), (whole, cuts) => {
        expect(isUtf8Parts(split(whole, cuts))).toBe(isUtf8(whole));
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses a character cut short at the end, or continued by a byte that does not continue it', () => {
    const euro = Buffer.from('€', 'utf8');
    expect(isUtf8Parts([euro.subarray(0, 1), euro.subarray(1)])).toBe(true);
    expect(isUtf8Parts([Buffer.from('a'), euro.subarray(0, 2)])).toBe(false);
    expect(isUtf8Parts([euro.subarray(0, 2), Buffer.from('a')])).toBe(false);
  });
});

describe('prefixOf', () => {
  it('is the first bytes of the parts joined, however many parts they span', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), fc.array(fc.nat(), { maxLength: 6 }), fc.nat({ max: 50 }), (whole, cuts, length) => {
        expect(Buffer.from(prefixOf(split(whole, cuts), length))).toEqual(Buffer.from(whole.subarray(0, length)));
      }),
    );
  });
});
