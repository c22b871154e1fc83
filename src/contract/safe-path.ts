// Refuses request paths that could mean something else to the upstream than to the gateway.

/**
 * Dot segments, empty segments, backslashes, control characters and percent-encoded separators,
 * dots or NUL: an upstream (or anything between) may normalise these differently from the gateway's
 * matcher, so such a path is never an operation of the interface and never reaches the upstream.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters in a path are exactly what this refuses.
const UNSAFE = /(?:^|\/)\.{1,2}(?:\/|$)|\/\/|\\|[\u0000-\u001f\u007f]|%(?:2e|2f|5c|00)|%(?![0-9a-f]{2})/i;

export function isSafePath(rawPath: string): boolean {
  return rawPath.startsWith('/') && !UNSAFE.test(rawPath);
}
