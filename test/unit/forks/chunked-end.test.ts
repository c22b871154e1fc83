// The end of a chunked body found read by read: where its framing says, however its bytes are cut, and never a guess.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CHUNKED_END_LOST, CHUNKED_END_NOT_YET, ChunkedEnd } from '../../../src/forks/chunked-end.ts';

/** A chunked body as a backend writes it: chunks (some with extensions, sizes in either case), the last chunk, trailers. */
const chunkedBody = fc
  .record({
    chunks: fc.array(fc.record({ data: fc.string({ minLength: 1, maxLength: 40 }), extension: fc.constantFrom('', ';a=1', ';name="v"', ' ;x') }), {
      maxLength: 6,
    }),
    upper: fc.boolean(),
    lastExtension: fc.constantFrom('', ';end'),
    trailers: fc.array(fc.constantFrom('X-Checksum: 7', 'Server-Timing: db;dur=3', 'Expires: 0'), { maxLength: 3 }),
  })
  .map(({ chunks, upper, lastExtension, trailers }) => {
    const size = (length: number) => (upper ? length.toString(16).toUpperCase() : length.toString(16));
    const framed = chunks.map(({ data, extension }) => `${size(Buffer.byteLength(data, 'latin1'))}${extension}\r\n${data}\r\n`).join('');
    return `${framed}0${lastExtension}\r\n${trailers.map((line) => `${line}\r\n`).join('')}\r\n`;
  });

/** The bytes cut into reads at `cuts` (positions, any order), fed in turn; the end as an offset into the whole, or what the last read said. */
function endOf(bytes: Buffer, cuts: readonly number[]): number {
  const reader = new ChunkedEnd();
  const bounds = [...new Set([0, ...cuts.map((cut) => cut % (bytes.length + 1)), bytes.length])].sort((a, b) => a - b);
  let said = CHUNKED_END_NOT_YET;
  for (let i = 1; i < bounds.length; i++) {
    // Each read handed over whole from its start, as the watch does after putting a read back: the reader begins at `from`.
    const read = bytes.subarray(0, bounds[i]);
    said = reader.scan(read, bounds[i - 1]!);
    if (said !== CHUNKED_END_NOT_YET) return said;
  }
  return said;
}

describe('the end of a chunked body', () => {
  it('is just past the empty line after its last chunk and trailers, however its bytes are cut into reads, whatever follows', () => {
    fc.assert(
      fc.property(chunkedBody, fc.constantFrom('', '\r\n', 'HTTP/1.1 200 OK\r\n', 'zz'), fc.array(fc.nat(), { maxLength: 8 }), (body, after, cuts) => {
        const bytes = Buffer.from(body + after, 'latin1');
        expect(endOf(bytes, cuts)).toBe(Buffer.byteLength(body, 'latin1'));
      }),
    );
  });

  it('is not yet known while any of it is still to come', () => {
    fc.assert(
      fc.property(chunkedBody, fc.nat(), (body, cut) => {
        const bytes = Buffer.from(body, 'latin1');
        expect(new ChunkedEnd().scan(bytes.subarray(0, cut % bytes.length), 0)).toBe(CHUNKED_END_NOT_YET);
      }),
    );
  });

  it.each([
    ['a size that is not hex', 'zz\r\nab\r\n0\r\n\r\n'],
    ['no size at all', '\r\n0\r\n\r\n'],
    ['a bare LF ending the size line', '2\nab\r\n0\r\n\r\n'],
    ['data longer than its size', '2\r\nabc\r\n0\r\n\r\n'],
    ['a bare LF ending a trailer', '0\r\nX-Checksum: 7\n\r\n'],
    ['a size of 14 hex digits', '10000000000000\r\n'],
  ])('is lost at %s: never a guess', (_name, body) => {
    expect(new ChunkedEnd().scan(Buffer.from(body, 'latin1'), 0)).toBe(CHUNKED_END_LOST);
  });

  it('steps over a chunk of 100 kB without reading it: the end comes with its last read', () => {
    const reader = new ChunkedEnd();
    expect(reader.scan(Buffer.from('186a0\r\n'), 0)).toBe(CHUNKED_END_NOT_YET);
    expect(reader.scan(Buffer.alloc(100_000, 0x0d), 0)).toBe(CHUNKED_END_NOT_YET);
    expect(reader.scan(Buffer.from('\r\n0\r\n\r\n\r\n'), 0)).toBe(7);
  });
});
