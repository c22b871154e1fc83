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

/**
 * JSON.stringify escapes C0 controls only: DEL, C1 controls (U+009B starts terminal sequences too),
 * format characters (U+202E reverses the line) and U+2028/U+2029 pass raw. Such characters can only
 * stand in a string of the output, where `\uNNNN` means the same: still the same JSON.
 */
const UNPRINTABLE_IN_JSON = /[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}]/gu;

/** `JSON.stringify(value)`, every character a terminal would act on written as `\uNNNN`. */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(UNPRINTABLE_IN_JSON, (character) => `\\u${character.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}
