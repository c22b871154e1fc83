// Text read from Redis or a gateway, made safe to print on an operator's terminal: no character in it can move the cursor or start a line.

/**
 * Control characters (C0, DEL, C1: ESC starts terminal sequences), format characters (bidi overrides
 * reorder what is shown), line and paragraph separators, and lone surrogates. The backslash is
 * escaped too, so an escape printed is never confused with the same characters typed in a name.
 */
const UNPRINTABLE = /[\\\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/gu;

function escapeOne(character: string): string {
  if (character === '\\') return '\\\\';
  const code = character.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** `text` with each unprintable character written as `\xNN` or `\uNNNN` (ESC as `\x1b`), and `\` as `\\`. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escapeOne);
}
