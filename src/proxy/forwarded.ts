// Whether a Forwarded header value parses as RFC 7239 says, so the gateway appends its element only to a chain that holds.

// forwarded-parse (npm) was considered: it accepts whitespace around ";" (`for=a ; proto=http`), which
// RFC 7239's grammar does not, and keeps the last of a repeated parameter where §4 forbids repeating
// one; a stricter backend parser would then refuse the whole header, the gateway's element with it.

const EQUALS = 0x3d;
const SEMICOLON = 0x3b;
const COMMA = 0x2c;
const DQUOTE = 0x22;
const BACKSLASH = 0x5c;
const SP = 0x20;
const HTAB = 0x09;

/** tchar (RFC 9110 §5.6.2): `!#$%&'*+-.^_`|~`, digits and letters. */
const TCHAR = new Uint8Array(128);
for (const char of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TCHAR[char.charCodeAt(0)] = 1;

const isTchar = (code: number): boolean => code < 128 && TCHAR[code] === 1;
const isOws = (code: number): boolean => code === SP || code === HTAB;
/** qdtext (RFC 9110 §5.6.4): HTAB, SP, %x21, %x23-5B, %x5D-7E, obs-text. */
const isQdtext = (code: number): boolean =>
  code === HTAB || code === SP || code === 0x21 || (code >= 0x23 && code <= 0x5b) || (code >= 0x5d && code <= 0x7e) || (code >= 0x80 && code <= 0xff);
/** What a quoted-pair may escape: HTAB, SP, VCHAR, obs-text. */
const isEscapable = (code: number): boolean => code === HTAB || (code >= 0x20 && code <= 0x7e) || (code >= 0x80 && code <= 0xff);

/** The index after the token that starts at `start`, or `start` when none does. */
function tokenEnd(value: string, start: number): number {
  let i = start;
  while (i < value.length && isTchar(value.charCodeAt(i))) i++;
  return i;
}

/** The index after the quoted-string that starts at `start` (on its opening quote), or -1 when it is not one. */
function quotedEnd(value: string, start: number): number {
  for (let i = start + 1; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code === DQUOTE) return i + 1;
    if (code === BACKSLASH) {
      i++;
      if (i >= value.length || !isEscapable(value.charCodeAt(i))) return -1;
    } else if (!isQdtext(code)) {
      return -1;
    }
  }
  return -1;
}

/**
 * `forwarded-element *( OWS "," OWS forwarded-element )`, each element `pair *( ";" pair )` with
 * `pair = token "=" ( token / quoted-string )`, no parameter twice in one element (RFC 7239 §4).
 * Stricter than the RFC in one way: an empty element or pair (`a=1;;b=2`, `a=1,,b=2`) is refused; a
 * chain with one says nothing a backend could rely on.
 */
export function isForwardedValue(value: string): boolean {
  let i = 0;
  for (;;) {
    const names = new Set<string>();
    for (;;) {
      const nameEnd = tokenEnd(value, i);
      if (nameEnd === i || value.charCodeAt(nameEnd) !== EQUALS) return false;
      const name = value.slice(i, nameEnd).toLowerCase();
      if (names.has(name)) return false;
      names.add(name);
      const valueStart = nameEnd + 1;
      i = value.charCodeAt(valueStart) === DQUOTE ? quotedEnd(value, valueStart) : tokenEnd(value, valueStart);
      if (i === -1 || i === valueStart) return false;
      if (value.charCodeAt(i) !== SEMICOLON) break;
      i++;
    }
    if (i === value.length) return true;
    while (isOws(value.charCodeAt(i))) i++;
    if (value.charCodeAt(i) !== COMMA) return false;
    i++;
    while (isOws(value.charCodeAt(i))) i++;
  }
}
