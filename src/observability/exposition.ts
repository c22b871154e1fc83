// What the exposition formats cannot carry, made safe: control characters in label values, quotes in OpenMetrics HELP.
import { Registry } from 'prom-client';

/**
 * Characters neither text format can escape in a label value: C0 controls but the line feed, DEL, C1 controls and
 * U+2028/9. Raw, they end a C string (NUL), drive a terminal (ESC) or end a line (CR, NEL). A consumer name comes from
 * Redis whatever the admin API accepts, so the exposition itself is made safe.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this expression's purpose.
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;
const CONTROLS = new RegExp(CONTROL.source, 'g');

/** The character as `\\u001b` (an escaped backslash), read back as six visible characters: nothing dropped or merged. */
function visible(character: string): string {
  return `\\\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** Outside label values and HELP there are only names, numbers and line feeds, so the whole text can be rewritten. */
export function withoutControlCharacters(exposition: string): string {
  return CONTROL.test(exposition) ? exposition.replace(CONTROLS, visible) : exposition;
}

/** prom-client's registry, whose Prometheus text exposition (`metrics()`) carries no control character. */
export class ExpositionRegistry extends Registry {
  override async metrics(): Promise<string> {
    return withoutControlCharacters(await super.metrics());
  }
}

/** OpenMetrics HELP may hold no raw `"` (ABNF `normal-char`); prom-client never escapes one, so every `"` there is raw. */
export function withEscapedHelpQuotes(exposition: string): string {
  return exposition.replace(/^# HELP .*"/gm, (line) => line.replaceAll('"', '\\"'));
}
