// A body as the parts it arrived in: read without joining them, where only its start or its validity is needed.
import { isUtf8 } from 'node:buffer';

/** The body's length in bytes. */
export function byteLength(parts: readonly Uint8Array[]): number {
  let length = 0;
  for (const part of parts) length += part.length;
  return length;
}

/** The first `length` bytes (fewer when the body is shorter): a view of the first part when it holds them, else a copy of them alone. */
export function prefixOf(parts: readonly Uint8Array[], length: number): Uint8Array {
  const first = parts[0] ?? new Uint8Array(0);
  if (first.length >= length || parts.length === 1) return first.subarray(0, length);
  const prefix = new Uint8Array(Math.min(length, byteLength(parts)));
  let at = 0;
  for (const part of parts) {
    if (at === prefix.length) break;
    const taken = part.subarray(0, prefix.length - at);
    prefix.set(taken, at);
    at += taken.length;
  }
  return prefix;
}

/**
 * Whether the parts joined are valid UTF-8, without joining them: each part is checked up to the end of its last whole character,
 * and a character split across parts is checked joined (buffer.isUtf8, no string made).
 */
export function isUtf8Parts(parts: readonly Uint8Array[]): boolean {
  let split: Uint8Array = new Uint8Array(0);
  for (const part of parts) {
    let rest = part;
    if (split.length > 0) {
      const missing = Math.min(sequenceLength(split[0]!) - split.length, rest.length);
      split = Buffer.concat([split, rest.subarray(0, missing)]);
      rest = rest.subarray(missing);
      if (split.length < sequenceLength(split[0]!)) continue;
      if (!isUtf8(split)) return false;
      split = new Uint8Array(0);
    }
    const whole = wholeCharactersEnd(rest);
    if (!isUtf8(rest.subarray(0, whole))) return false;
    split = rest.subarray(whole);
  }
  return split.length === 0;
}

/** How many bytes the character a lead byte starts takes (1 for a byte no character starts with: isUtf8 refuses it). */
function sequenceLength(lead: number): number {
  if ((lead & 0xe0) === 0xc0) return 2;
  if ((lead & 0xf0) === 0xe0) return 3;
  if ((lead & 0xf8) === 0xf0) return 4;
  return 1;
}

/** Where the last character that the bytes hold whole ends: before a lead byte among the last three whose character is cut off. */
function wholeCharactersEnd(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!;
    if ((byte & 0xc0) !== 0x80) return sequenceLength(byte) > back ? bytes.length - back : bytes.length;
  }
  return bytes.length;
}
