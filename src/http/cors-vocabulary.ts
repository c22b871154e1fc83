// The Fetch standard's CORS words the gateway reads and writes: what an origin looks like, and merging a Vary field.

/** Why `value` is not an http(s) origin a browser would send in `Origin` (RFC 6454 §6.2), or undefined when it is one. */
export function originProblem(value: string): string | undefined {
  if (value === 'null') return 'null is the origin of sandboxed frames and file: pages, which any site can produce: list real origins';
  if (!URL.canParse(value)) return 'must be an origin: scheme://host[:port]';
  const url = new URL(value);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http:// or https:// origin';
  // A browser serialises its origin this one way; any other spelling would never match its Origin header.
  if (url.origin !== value) return `must be written as a browser sends it (scheme://host[:port], lower case, no path, no default port): ${url.origin}`;
  return undefined;
}

/** A Vary field's names, as written (one field line, several, or none). */
function varyNames(value: number | string | readonly string[] | undefined): string[] {
  const text = Array.isArray(value) ? value.join(',') : value === undefined ? '' : String(value);
  return text
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
}

/** `existing` with the Vary names of `added` it lacks (case-insensitively); `*` alone when either has it (RFC 9110 §12.5.5). */
export function withVary(existing: number | string | readonly string[] | undefined, added: string | readonly string[]): string {
  const names = varyNames(existing);
  const seen = new Set(names.map((name) => name.toLowerCase()));
  for (const name of varyNames(added)) {
    if (!seen.has(name.toLowerCase())) names.push(name);
    seen.add(name.toLowerCase());
  }
  return seen.has('*') ? '*' : names.join(', ');
}
