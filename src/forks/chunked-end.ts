// Where a chunked body ends in the bytes of its connection, found read by read as they arrive: the framing is looked at, the data skipped.

/** `scan` has not met the end yet: more bytes are needed. */
export const CHUNKED_END_NOT_YET = -1;
/** `scan` met bytes that are not chunked framing as it reads it (RFC 9112 §7.1, CRLF line ends): the end is not known. */
export const CHUNKED_END_LOST = -2;

/** Hex digits of a chunk size at most: 13 (2^52 bytes) keeps the size an exact Number; llhttp refuses sizes past 64 bits anyway. */
const MAX_SIZE_DIGITS = 13;
const CR = 0x0d;
const LF = 0x0a;

// Where the reader is (numbers, not an enum: the sources run as Node strips their types).
/** A chunk-size line: hex digits. */
const SIZE = 0;
/** Past the digits: extensions (or whitespace) up to the line's CR. */
const EXTENSION = 1;
const SIZE_LF = 2;
const DATA = 3;
const DATA_CR = 4;
const DATA_LF = 5;
/** The start of a trailer line, or of the empty line that ends the body. */
const TRAILER_START = 6;
const TRAILER = 7;
const TRAILER_LF = 8;
const END_LF = 9;
const LOST = 10;

function hexValue(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

const LINE_LOST = -2;

/**
 * The CR ending the line that goes on at `from` (-1: not in these bytes), or LINE_LOST for a bare LF before it, which llhttp's
 * strict mode refuses and its lenient ones would read as a line end: either way not a line this reader can place.
 */
function lineEnd(bytes: Uint8Array, from: number): number {
  const cr = bytes.indexOf(CR, from);
  const lf = bytes.indexOf(LF, from);
  return lf !== -1 && (cr === -1 || lf < cr) ? LINE_LOST : cr;
}

/**
 * One chunked body's framing, fed its bytes in order. Each byte of framing (size lines, CRLFs, trailers) is looked at once; a
 * chunk's data is stepped over by its size, never read or copied. A wrong guess costs nothing but the end: a byte this reader
 * does not expect loses it (`CHUNKED_END_LOST`), and the caller is left where it was without it.
 */
export class ChunkedEnd {
  private at: number = SIZE;
  /** The size being read (SIZE), or the data bytes still to step over (DATA). */
  private size = 0;
  private digits = 0;

  /**
   * Reads `bytes` from `from`. Returns the index in `bytes` just past the body's last byte (the CRLF ending its trailers) once it
   * is there, `CHUNKED_END_NOT_YET` when every byte was framing or data still inside the body, or `CHUNKED_END_LOST`.
   */
  scan(bytes: Uint8Array, from: number): number {
    let i = from;
    const end = bytes.length;
    while (i < end) {
      switch (this.at) {
        case SIZE: {
          const byte = bytes[i]!;
          const value = hexValue(byte);
          if (value !== -1) {
            if (++this.digits > MAX_SIZE_DIGITS) return this.lose();
            this.size = this.size * 16 + value;
          } else if (this.digits === 0) return this.lose();
          else if (byte === CR) this.at = SIZE_LF;
          else if (byte === 0x3b || byte === 0x20 || byte === 0x09) this.at = EXTENSION;
          else return this.lose();
          i++;
          break;
        }
        case EXTENSION: {
          const cr = lineEnd(bytes, i);
          if (cr === LINE_LOST) return this.lose();
          if (cr === -1) return CHUNKED_END_NOT_YET;
          this.at = SIZE_LF;
          i = cr + 1;
          break;
        }
        case SIZE_LF:
          if (bytes[i++] !== LF) return this.lose();
          this.at = this.size === 0 ? TRAILER_START : DATA;
          break;
        case DATA: {
          const step = Math.min(this.size, end - i);
          this.size -= step;
          i += step;
          if (this.size === 0) this.at = DATA_CR;
          break;
        }
        case DATA_CR:
          if (bytes[i++] !== CR) return this.lose();
          this.at = DATA_LF;
          break;
        case DATA_LF:
          if (bytes[i++] !== LF) return this.lose();
          this.at = SIZE;
          this.digits = 0;
          break;
        case TRAILER_START:
          this.at = bytes[i++] === CR ? END_LF : TRAILER;
          break;
        case TRAILER: {
          const cr = lineEnd(bytes, i);
          if (cr === LINE_LOST) return this.lose();
          if (cr === -1) return CHUNKED_END_NOT_YET;
          this.at = TRAILER_LF;
          i = cr + 1;
          break;
        }
        case TRAILER_LF:
          if (bytes[i++] !== LF) return this.lose();
          this.at = TRAILER_START;
          break;
        case END_LF:
          if (bytes[i] !== LF) return this.lose();
          return i + 1;
        case LOST:
          return CHUNKED_END_LOST;
      }
    }
    return CHUNKED_END_NOT_YET;
  }

  private lose(): number {
    this.at = LOST;
    return CHUNKED_END_LOST;
  }
}
