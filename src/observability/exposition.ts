// What the exposition formats cannot carry, made safe: control characters in label values, quotes in OpenMetrics HELP.
import { Registry } from 'prom-client';

/**
 * Characters neither text format lets a label value escape (only `\\`, `\"` and `\n` have escapes, which
 * prom-client writes): C0 controls but the line feed (escaped in values and HELP, so a raw one only ever
 * ends a line), DEL, C1 controls (NEL among them), and Unicode's line and paragraph separators. Both
 * formats would carry most of them raw, and Prometheus accepts them, but raw they are a NUL that ends a C
 * string, an ESC that drives the terminal of whoever reads /metrics, a CR or NEL that ends a line for a
 * reader splitting on universal newlines. A consumer name reaches a label value from Redis, whatever the
 * admin API accepts today, so the exposition itself is made safe, whatever the label.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this expression's purpose.
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;
const CONTROLS = new RegExp(CONTROL.source, 'g');

/**
 * The character as visible text, `\u001b`: written `\\u001b` (an escaped backslash, then `u001b`), which
 * a parser reads back as the six characters. Distinct characters stay distinct; nothing is dropped.
 */
function visible(character: string): string {
  return `\\\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/**
 * `exposition` with every control character written as visible text. Outside label values and HELP, an
 * exposition holds only names, numbers and the line feeds between lines, so the whole text can be
 * rewritten; one scan of the text when it holds none (every scrape but a hostile one).
 */
export function withoutControlCharacters(exposition: string): string {
  return CONTROL.test(exposition) ? exposition.replace(CONTROLS, visible) : exposition;
}

/** prom-client's registry, whose Prometheus text exposition (`metrics()`) carries no control character. */
export class ExpositionRegistry extends Registry {
  override async metrics(): Promise<string> {
    return withoutControlCharacters(await super.metrics());
  }
}

/**
 * OpenMetrics HELP text as the format requires: its escaped-string has no unescaped `"` (ABNF `normal-char`
 * leaves out %x22), while prom-client writes HELP as the Prometheus text format does (`\\` and `\n` only).
 * prom-client never writes `\"` in HELP, so every `"` on a HELP line is a raw one, to escape.
 */
export function withEscapedHelpQuotes(exposition: string): string {
  return exposition.replace(/^# HELP .*"/gm, (line) => line.replaceAll('"', '\\"'));
}
