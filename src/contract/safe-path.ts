// Refuses request paths that could mean something else to the upstream than to the gateway.

/** Dot or empty segments, backslashes, control characters, encoded separators, dots or NUL: an upstream may normalise them otherwise. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters in a path are exactly what this refuses.
const UNSAFE = /(?:^|\/)\.{1,2}(?:\/|$)|\/\/|\\|[\u0000-\u001f\u007f]|%(?:2e|2f|5c|00)|%(?![0-9a-f]{2})/i;

export function isSafePath(rawPath: string): boolean {
  return rawPath.startsWith('/') && !UNSAFE.test(rawPath);
}
