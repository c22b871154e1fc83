// What each response of an operation declares, compiled for checking the backend's answers: media types, body schemas, required headers.
import type { ValidateFunction } from 'ajv';
import type { ResolveRef } from './declared-headers.ts';

/** One media type a response declares. */
export interface DeclaredContent {
  /** Lower case, without parameters; may be a range (`application/*`, `*\/*`). */
  mediaType: string;
  /** Checks the parsed body, for a JSON media type; undefined: the body's bytes are not the document's to check. */
  validate: ValidateFunction | undefined;
  /** The body is the document's Error, whose `status` must be the answer's. */
  isError: boolean;
  /** Every member name the schema declares (its `properties`, through its references): a violation's pointer names no other. */
  memberNames: ReadonlySet<string>;
}

/** One response of an operation, as the document declares it under its key. */
export interface DeclaredResponse {
  /** The document's key: a status (`200`), a range (`4XX`) or `default`. */
  key: string;
  /** Empty: the response declares no body. */
  content: readonly DeclaredContent[];
  /** Headers the document marks `required: true`, lower case. */
  requiredHeaders: readonly string[];
}

/** An operation's responses, looked up as OpenAPI says: the status's own, then its range, then `default`. */
export interface DeclaredResponses {
  for(status: number): DeclaredResponse | undefined;
  /** Every member name any of the responses declares: the only names a pointer into one of its answers carries (memberToken). */
  memberNames: ReadonlySet<string>;
}

type Json = Record<string, unknown>;

const RANGE_KEY = /^([1-5])XX$/;

/** `type/subtype` of a Content-Type value, lower case, without parameters. */
export function mediaTypeOf(contentType: string): string {
  return contentType.split(';', 1)[0]!.trim().toLowerCase();
}
const ERROR_SCHEMA = '#/components/schemas/Error';

function isJsonMediaType(mediaType: string): boolean {
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

/** `compileSchema` compiles a schema as it stands in the document (with its `#/components/schemas/...` references). */
export function compileDeclaredResponses(
  responses: unknown,
  where: string,
  resolveRef: ResolveRef,
  compileSchema: (schema: unknown) => ValidateFunction,
): DeclaredResponses {
  const declared: Array<[string, DeclaredResponse]> = [];
  if (responses !== undefined) {
    for (const [key, value] of Object.entries(resolveRef(responses, where))) {
      const at = `${where}.${key}`;
      const response = resolveRef(value, at);
      declared.push([
        key,
        {
          key,
          content: compileContent(response.content, `${at}.content`, resolveRef, compileSchema),
          requiredHeaders: requiredHeaders(response.headers, `${at}.headers`, resolveRef),
        },
      ]);
    }
  }
  const memberNames = new Set<string>();
  for (const [, response] of declared) for (const content of response.content) for (const name of content.memberNames) memberNames.add(name);
  return { for: byResponseKey(declared), memberNames };
}

/**
 * What is kept per response key (`200`, `4XX`, `default`), found for a status as OpenAPI says: its own key, then its range, then
 * `default`; undefined when none covers it. One Map lookup and one array read a status.
 */
export function byResponseKey<T>(entries: Iterable<readonly [string, T]>): (status: number) => T | undefined {
  const byStatus = new Map<number, T>();
  const byRange: Array<T | undefined> = [];
  let otherwise: T | undefined;
  for (const [key, value] of entries) {
    const range = RANGE_KEY.exec(key);
    if (key === 'default') otherwise = value;
    else if (range) byRange[Number(range[1])] = value;
    else byStatus.set(Number(key), value);
  }
  return (status) => byStatus.get(status) ?? byRange[Math.trunc(status / 100)] ?? otherwise;
}

function compileContent(content: unknown, where: string, resolveRef: ResolveRef, compileSchema: (schema: unknown) => ValidateFunction): DeclaredContent[] {
  if (content === undefined) return [];
  return Object.entries(resolveRef(content, where)).map(([mediaType, value]) => {
    const type = mediaTypeOf(mediaType);
    const schema = (value as Json | null)?.schema;
    const json = isJsonMediaType(type) && schema !== undefined;
    return {
      mediaType: type,
      validate: json ? compileSchema(schema) : undefined,
      isError: json && (schema as Json).$ref === ERROR_SCHEMA,
      memberNames: json ? declaredMemberNames(schema, where, resolveRef) : NO_NAMES,
    };
  });
}

const NO_NAMES: ReadonlySet<string> = new Set();

/** The names a schema declares under `properties` anywhere within it, following its local references once each. */
function declaredMemberNames(schema: unknown, where: string, resolveRef: ResolveRef): ReadonlySet<string> {
  const names = new Set<string>();
  const followed = new Set<string>();
  const walk = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return;
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
    const ref = (node as Json).$ref;
    if (typeof ref === 'string') {
      if (followed.has(ref)) return;
      followed.add(ref);
      walk(resolveRef({ $ref: ref }, where));
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties' && typeof value === 'object' && value !== null) for (const name of Object.keys(value)) names.add(name);
      // Examples and defaults are data, not declarations.
      if (key !== 'example' && key !== 'examples' && key !== 'default' && key !== 'enum' && key !== 'const') walk(value);
    }
  };
  walk(schema);
  return names;
}

function requiredHeaders(headers: unknown, where: string, resolveRef: ResolveRef): string[] {
  if (headers === undefined) return [];
  const required: string[] = [];
  for (const [name, value] of Object.entries(resolveRef(headers, where))) {
    if (resolveRef(value, `${where}.${name}`).required === true) required.push(name.toLowerCase());
  }
  return required;
}

/** The declared content an answer's media type falls under (`application/json` under `application/*` too); undefined: none. */
export function contentFor(declared: DeclaredResponse, mediaType: string): DeclaredContent | undefined {
  const slash = mediaType.indexOf('/');
  const range = `${mediaType.slice(0, slash)}/*`;
  return (
    declared.content.find((content) => content.mediaType === mediaType) ??
    declared.content.find((content) => content.mediaType === range) ??
    declared.content.find((content) => content.mediaType === '*/*')
  );
}
