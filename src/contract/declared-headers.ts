// The header names an operation declares: its header parameters (forwarded upstream) and each response's headers (relayed back).
import { NEVER_FORWARDED } from '../http/header-names.ts';

type Json = Record<string, unknown>;

/** A field name is a token (RFC 9110 §5.1). */
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A response key: a status, a range such as `4XX`, or `default` (OpenAPI 3.1 §4.8.16). */
const RESPONSE_KEY = /^(?:[1-5](?:\d\d|XX)|default)$/;
/** OpenAPI 3.1 §4.8.12.1: a header parameter named Accept, Content-Type or Authorization SHALL be ignored. */
const IGNORED_HEADER_PARAMETERS = new Set(['accept', 'content-type', 'authorization']);

/** Follows local references (`#/components/responses/NotFound`) to what they name. */
export type ResolveRef = (value: unknown, where: string) => Json;

export function createRefResolver(document: Json): ResolveRef {
  return function resolveRef(value, where) {
    let node = value;
    // A chain of references ends within a few hops; more is a cycle.
    for (let hops = 0; hops < 16; hops++) {
      if (typeof node !== 'object' || node === null || Array.isArray(node)) throw new Error(`interface document: ${where} must be an object`);
      const ref = (node as { $ref?: unknown }).$ref;
      if (ref === undefined) return node as Json;
      if (typeof ref !== 'string' || !ref.startsWith('#/')) throw new Error(`interface document: ${where}.$ref must be a local reference (#/...)`);
      node = ref
        .slice(2)
        .split('/')
        .reduce<unknown>((parent, key) => (parent as Json | undefined)?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], document);
      if (node === undefined) throw new Error(`interface document: ${where}.$ref ${ref} names nothing in the document`);
    }
    throw new Error(`interface document: ${where}.$ref is part of a cycle`);
  };
}

/** A header parameter's name, lower case; undefined where OpenAPI says to ignore it. One the gateway never forwards stops start-up. */
export function headerParameterName(name: string, where: string): string | undefined {
  const lower = name.toLowerCase();
  if (IGNORED_HEADER_PARAMETERS.has(lower)) return undefined;
  if (!FIELD_NAME.test(name)) throw new Error(`interface document: ${where}.name ${name} is not a header field name`);
  if (NEVER_FORWARDED.has(lower)) {
    throw new Error(`interface document: ${where}.name ${name} is a header the gateway sets itself or never forwards`);
  }
  return lower;
}

/** Each response's declared header names, lower case, by the document's key (`200`, `4XX`, `default`). */
export function compileResponseHeaders(responses: unknown, where: string, resolveRef: ResolveRef): ReadonlyMap<string, readonly string[]> {
  const compiled = new Map<string, readonly string[]>();
  if (responses === undefined) return compiled;
  for (const [key, value] of Object.entries(resolveRef(responses, where))) {
    const at = `${where}.${key}`;
    if (!RESPONSE_KEY.test(key)) throw new Error(`interface document: ${at} must be a status code, a range such as 4XX, or default`);
    const headers = resolveRef(value, at).headers;
    if (headers === undefined) {
      compiled.set(key, []);
      continue;
    }
    const names = Object.keys(resolveRef(headers, `${at}.headers`));
    for (const name of names) {
      if (!FIELD_NAME.test(name)) throw new Error(`interface document: ${at}.headers.${name} is not a header field name`);
    }
    compiled.set(
      key,
      names.map((name) => name.toLowerCase()),
    );
  }
  return compiled;
}
