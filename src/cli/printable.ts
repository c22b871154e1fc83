// Text read from Redis or a gateway, made safe to print on an operator's terminal: no character in it can move the cursor or start a line.

/**
 * Control characters (ESC starts terminal sequences), format characters (bidi overrides reorder what is shown), line and paragraph
 * separators, lone surrogates; and the backslash, so a printed escape is never confused with the same characters typed.
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

/** What JSON.stringify passes raw (DEL, C1, format characters, U+2028/9): only ever inside a string, where `\uNNNN` is the same JSON. */
const UNPRINTABLE_IN_JSON = /[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}]/gu;

/** `JSON.stringify(value)`, every character a terminal would act on written as `\uNNNN`. */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(UNPRINTABLE_IN_JSON, (character) => `\\u${character.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}
