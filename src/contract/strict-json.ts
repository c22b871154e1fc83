// Strict JSON for request bodies and backend answers: fatal UTF-8, RFC 8259 grammar, unique member names; for requests, numbers with their spelling.
import { byteLength, isUtf8Parts, prefixOf } from './body-parts.ts';

/** A number written with a fraction, an exponent or as `-0` although its value is an integer (`1.0`, `1e2`, `-0`). */
export interface NonCanonicalInteger {
  /** Where it is: member names and array indices from the root. */
  path: readonly (string | number)[];
  /** The literal as written. */
  text: string;
}

export type JsonBodyParse =
  | { ok: true; value: unknown; nonCanonicalIntegers: readonly NonCanonicalInteger[] }
  /** `bound`: refused for its nesting (past `maxDepth`) or its count of values and names (past `maxValues`) alone, the rest not read. */
  | { ok: false; reason: string; bound?: JsonBound };

/** The bound on the parse's work a body went past: its nesting, or its count of values and member names. */
export type JsonBound = 'depth' | 'values';

export interface JsonBodyOptions {
  /** Arrays and objects nested deeper than this are refused, so recursion stays bounded (default 64). */
  maxDepth?: number;
  /**
   * Whether integers written as `1.0`, `1e2` or `-0` are recorded with their place (default true): request validation needs them.
   * Answers are parsed without: the record costs a copy of the path per such number, which made one hostile answer cost 0.2-0.7 s.
   */
  spellings?: boolean;
  /**
   * Bodies with more values and member names than this (every array, object, string, number, literal and member name counts one)
   * are refused past the last one allowed, so the parse's CPU stays bounded whatever the body's size (default: no bound; answers
   * are bounded, decision 0025).
   */
  maxValues?: number;
}

// The BOM is checked on the bytes and refused; ignoreBOM keeps the decoder from dropping one silently.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const INT64_MIN = -(2n ** 63n);
const INT64_LIMIT = 2n ** 63n; // exclusive
const ESCAPES = new Map([
  ['"', '"'],
  ['\\', '\\'],
  ['/', '/'],
  ['b', '\b'],
  ['f', '\f'],
  ['n', '\n'],
  ['r', '\r'],
  ['t', '\t'],
]);
const LITERALS: ReadonlyArray<readonly [string, boolean | null]> = [
  ['true', true],
  ['false', false],
  ['null', null],
];

/** Thrown inside the parser only; parseJsonBody turns it into a result. */
class Refusal {
  readonly reason: string;
  readonly bound: JsonBound | undefined;
  /** The cursor when refused (bounds only). */
  readonly at: number;
  constructor(reason: string, bound?: JsonBound, at = 0) {
    this.reason = reason;
    this.bound = bound;
    this.at = at;
  }
}

/**
 * Parses a request body, never throwing. Refused, with a reason that reads after "Request body": invalid UTF-8, a BOM, anything
 * RFC 8259 does not allow, a member name twice in one object, an escaped lone surrogate (U+FFFD elsewhere, making names equal),
 * nesting beyond `maxDepth`. Integers beyond double precision become a safe integer of their sign in the int64 range, else one it refuses.
 * The body may be given as the parts it arrived in.
 */
export function parseJsonBody(body: Uint8Array | readonly Uint8Array[], options: JsonBodyOptions = {}): JsonBodyParse {
  const { maxDepth = 64, spellings = true, maxValues = Number.POSITIVE_INFINITY } = options;
  // A request's body comes whole: no parts made for it, so request validation costs what it did.
  const start = body instanceof Uint8Array ? body : prefixOf(body, 3);
  if (start[0] === 0xef && start[1] === 0xbb && start[2] === 0xbf) return { ok: false, reason: 'must not start with a byte order mark' };
  const whole = body instanceof Uint8Array ? body : undefined;
  if (maxValues !== Number.POSITIVE_INFINITY && (whole?.length ?? byteLength(body as readonly Uint8Array[])) > PREFIX_BYTES) {
    const parts = whole === undefined ? (body as readonly Uint8Array[]) : [whole];
    // Bounded (answers): the whole body is validated as UTF-8 without making a string of it or joining its parts, and its prefix
    // alone is decoded and parsed first; a hostile body stops at the bound in its first kilobytes, not after all of it is decoded.
    if (!isUtf8Parts(parts)) return { ok: false, reason: 'is not valid UTF-8' };
    // One byte more than the prefix: whether the prefix's end cuts a character.
    const head = prefixOf(parts, PREFIX_BYTES + 1);
    const refused = boundWithin(decoder.decode(head.subarray(0, characterStart(head, PREFIX_BYTES))), maxDepth, spellings, maxValues);
    if (refused !== undefined) return refused;
  }
  const bytes = whole ?? (body.length === 1 ? (body as readonly Uint8Array[])[0]! : Buffer.concat(body as readonly Uint8Array[]));
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    return { ok: false, reason: 'is not valid UTF-8' };
  }
  try {
    return { ok: true, ...parseText(text, maxDepth, spellings, maxValues) };
  } catch (error) {
    if (error instanceof Refusal) return refusalOf(error);
    throw error;
  }
}

/**
 * The prefix of a bounded body parsed first: 4,096 values of `0.0,` fit in it. One it does not settle is parsed whole: its prefix
 * parsed twice, at most 16 KiB more (the document's largest answer, 100 pets, is about 9 KiB: parsed once).
 */
const PREFIX_BYTES = 16_384;

function refusalOf(error: Refusal): JsonBodyParse {
  return error.bound !== undefined ? { ok: false, reason: error.reason, bound: error.bound } : { ok: false, reason: error.reason };
}

/** The largest index at or before `at` where a UTF-8 character starts (`bytes` is valid UTF-8), so a prefix ends between characters. */
function characterStart(bytes: Uint8Array, at: number): number {
  let start = at;
  while (start > 0 && (bytes[start]! & 0xc0) === 0x80) start--;
  return start;
}

/**
 * The bound a body's prefix already goes past, read no further than the prefix: then the whole body's parse refuses alike, having
 * read the same characters. Undefined when the prefix does not settle it (the parse reached its end, or it refused otherwise).
 */
function boundWithin(prefix: string, maxDepth: number, spellings: boolean, maxValues: number): JsonBodyParse | undefined {
  try {
    parseText(prefix, maxDepth, spellings, maxValues);
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    // The cursor only moves forward and a look past the end either moves it past the end or refuses as not JSON: a bound refused
    // with the cursor inside the prefix was reached reading the prefix alone.
    if (error.bound !== undefined && error.at < prefix.length) return refusalOf(error);
  }
  return undefined;
}

// One recursive descent over the text and a shared cursor; it stays whole in one file, though past
// 200 lines, because split apart its pieces would have to pass the cursor around.
function parseText(text: string, maxDepth: number, spellings: boolean, maxValues: number): { value: unknown; nonCanonicalIntegers: NonCanonicalInteger[] } {
  const nonCanonicalIntegers: NonCanonicalInteger[] = [];
  // Member names and indices from the root, kept only where spellings are recorded (they carry it); `depth` bounds the recursion.
  const path: (string | number)[] = [];
  let depth = 0;
  let values = 0;
  let i = 0;

  const notJson = (): Refusal => new Refusal('is not valid JSON');
  const unpaired = (): Refusal => new Refusal('contains an unpaired surrogate escape');

  function skipWhitespace(): void {
    for (;;) {
      const code = text.charCodeAt(i);
      if (code !== 0x20 && code !== 0x0a && code !== 0x0d && code !== 0x09) return;
      i++;
    }
  }

  function eat(code: number): void {
    if (text.charCodeAt(i) !== code) throw notJson();
    i++;
  }

  /** Consumes whitespace and then `code` (a closing bracket) when it comes next. */
  function closes(code: number): boolean {
    skipWhitespace();
    if (text.charCodeAt(i) !== code) return false;
    i++;
    return true;
  }

  /** One more value or member name read: past `maxValues`, the rest is not. */
  function count(): void {
    if (++values > maxValues) throw new Refusal(`has more than ${maxValues} values and member names`, 'values', i);
  }

  function parseValue(): unknown {
    count();
    skipWhitespace();
    const code = text.charCodeAt(i);
    if (code === 0x7b) return parseObject();
    if (code === 0x5b) return parseArray();
    if (code === 0x22) return parseString();
    if (code === 0x2d || (code >= 0x30 && code <= 0x39)) return parseNumber();
    for (const [word, value] of LITERALS) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return value;
      }
    }
    throw notJson();
  }

  function enter(): void {
    if (depth >= maxDepth) throw new Refusal(`is nested more than ${maxDepth} levels deep`, 'depth', i);
    depth++;
  }

  function parseObject(): Record<string, unknown> {
    enter();
    i++;
    const object: Record<string, unknown> = {};
    if (closes(0x7d)) {
      depth--;
      return object;
    }
    for (;;) {
      skipWhitespace();
      if (text.charCodeAt(i) !== 0x22) throw notJson();
      count();
      const name = parseString();
      if (Object.hasOwn(object, name)) throw new Refusal(`field '${describePath([...path, name])}' must be given once`);
      skipWhitespace();
      eat(0x3a);
      if (spellings) path.push(name);
      const value = parseValue();
      if (spellings) path.pop();
      // Assigning "__proto__" would set the prototype; JSON.parse makes it an own member, and so does this.
      if (name === '__proto__') Object.defineProperty(object, name, { value, writable: true, enumerable: true, configurable: true });
      else object[name] = value;
      if (closes(0x7d)) {
        depth--;
        return object;
      }
      eat(0x2c);
    }
  }

  function parseArray(): unknown[] {
    enter();
    i++;
    const array: unknown[] = [];
    if (closes(0x5d)) {
      depth--;
      return array;
    }
    for (;;) {
      if (spellings) path.push(array.length);
      array.push(parseValue());
      if (spellings) path.pop();
      if (closes(0x5d)) {
        depth--;
        return array;
      }
      eat(0x2c);
    }
  }

  function parseString(): string {
    i++; // the opening quote
    let result = '';
    let chunkStart = i;
    for (;;) {
      const code = text.charCodeAt(i);
      if (code === 0x22) break;
      if (code < 0x20 || Number.isNaN(code)) throw notJson(); // control character, or the text ended
      if (code !== 0x5c) {
        i++;
        continue;
      }
      result += text.slice(chunkStart, i);
      result += parseEscape();
      chunkStart = i;
    }
    result += text.slice(chunkStart, i);
    i++; // the closing quote
    return result;
  }

  function parseEscape(): string {
    const escaped = text[i + 1] ?? '';
    i += 2;
    if (escaped !== 'u') {
      const character = ESCAPES.get(escaped);
      if (character === undefined) throw notJson();
      return character;
    }
    const unit = parseHex4();
    if (unit < 0xd800 || unit > 0xdfff) return String.fromCharCode(unit);
    if (unit >= 0xdc00 || text.charCodeAt(i) !== 0x5c || text.charCodeAt(i + 1) !== 0x75) throw unpaired();
    i += 2;
    const low = parseHex4();
    if (low < 0xdc00 || low > 0xdfff) throw unpaired();
    return String.fromCharCode(unit, low);
  }

  function parseHex4(): number {
    const digits = text.slice(i, i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(digits)) throw notJson();
    i += 4;
    return parseInt(digits, 16);
  }

  function skipDigits(): void {
    const start = i;
    while (isDigit(text.charCodeAt(i))) i++;
    if (i === start) throw notJson();
  }

  function parseNumber(): number {
    const start = i;
    if (text.charCodeAt(i) === 0x2d) i++;
    if (text.charCodeAt(i) === 0x30) i++;
    else skipDigits();
    let plainDigits = true;
    if (text.charCodeAt(i) === 0x2e) {
      i++;
      skipDigits();
      plainDigits = false;
    }
    const code = text.charCodeAt(i);
    if (code === 0x65 || code === 0x45) {
      i++;
      const sign = text.charCodeAt(i);
      if (sign === 0x2b || sign === 0x2d) i++;
      skipDigits();
      plainDigits = false;
    }
    const literal = text.slice(start, i);
    const value = Number(literal);
    if (!plainDigits || literal === '-0') {
      if (spellings && Number.isInteger(value)) nonCanonicalIntegers.push({ path: [...path], text: literal });
      return value;
    }
    if (Number.isSafeInteger(value)) return value;
    // Beyond double precision 2^63 - 1 and 2^63 are one double; the digits decide the int64 range.
    const exact = BigInt(literal);
    if (exact >= INT64_MIN && exact < INT64_LIMIT) return value < 0 ? Number.MIN_SAFE_INTEGER : Number.MAX_SAFE_INTEGER;
    return value < 0 ? -(2 ** 64) : 2 ** 64;
  }

  const value = parseValue();
  skipWhitespace();
  if (i !== text.length) throw notJson();
  return { value, nonCanonicalIntegers };
}

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

/** `owner.tags.0`, as the schema errors name fields; client-chosen names are cut short. */
export function describePath(path: readonly (string | number)[]): string {
  const joined = path.join('.');
  return joined.length > 80 ? `${joined.slice(0, 79)}…` : joined;
}
