// Reads the bearer token from an Authorization header (RFC 6750 §2.1; the scheme is case-insensitive).

export type BearerResult = { kind: 'missing' } | { kind: 'malformed' } | { kind: 'token'; token: string };

/** `Bearer` SP token68, with the scheme in any case; a token longer than any issued key is malformed. */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]{1,256}=*) *$/i;

export function readBearer(header: string | undefined): BearerResult {
  if (header === undefined || header === '') return { kind: 'missing' };
  const match = BEARER.exec(header);
  return match ? { kind: 'token', token: match[1]! } : { kind: 'malformed' };
}
