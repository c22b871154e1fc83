// Whether an answer keeps the document's promise for its operation: its status, its headers, its media type, its body.
// What a violation says names where and which rule, never a value of the body (it may carry personal data).
import type { ErrorObject } from 'ajv';
import { memberToken } from './declared-pointer.ts';
import { contentFor, type DeclaredContent, type DeclaredResponse, type DeclaredResponses, mediaTypeOf } from './declared-responses.ts';
import { type JsonBodyParse, parseJsonBody } from './strict-json.ts';

/** Every way an answer can break the document; a closed set, the violations counter's `kind` label. */
export const CONTRACT_VIOLATION_KINDS = [
  'undeclared_status',
  'media_type',
  'body_schema',
  'missing_header',
  'error_status_mismatch',
  'unparseable_body',
] as const;
export type ContractViolationKind = (typeof CONTRACT_VIOLATION_KINDS)[number];

/** The first rule an answer breaks. */
export interface ContractViolation {
  kind: ContractViolationKind;
  /** The document's response key the answer fell under (`200`, `default`); undefined for an undeclared status. */
  response: string | undefined;
  /** RFC 6901 pointer into the body to the first failing field (`/0/categoryId`); '' for the whole body, or for the head. */
  pointer: string;
  /** The JSON Schema keyword that failed (`required`, `enum`, `format`...), or what the head broke (`content`, `required`). */
  keyword: string;
  /** For `missing_header`: the header's name. */
  header?: string;
}

/** What a body is checked against: the response its status fell under, and the media type its head named. */
export interface BodyRule {
  declared: DeclaredResponse;
  content: DeclaredContent;
}

/** A head that keeps the promise, and the rule its body is checked by (undefined: no body to check). */
export type HeadVerdict = { violation: ContractViolation } | { violation?: undefined; body: BodyRule | undefined };

/**
 * Answers nested deeper than this are not checked (counted unchecked, `too_deep`): the document's nest a few levels, and the
 * bound stops the parse of a hostile answer after its first bytes (docs/decisions/0025-bounded-answer-checks.md).
 */
export const MAX_ANSWER_DEPTH = 32;

/**
 * Answers with more values and member names than this are not checked (counted unchecked, `too_many_values`): the document's
 * largest answer, a page of 100 pets, has 901; the bound keeps one check to a few ms of CPU however its bytes are spent (65,504 ×
 * `0.0` fit in the size bound; docs/decisions/0025-bounded-answer-checks.md).
 */
export const MAX_ANSWER_VALUES = 4_096;

/** What checking a body found that is not a violation: it went past MAX_ANSWER_DEPTH or MAX_ANSWER_VALUES, and was not checked. */
export type BodyPastBound = 'too_deep' | 'too_many_values';

/** Longest pointer a violation carries: the member names of a deeply nested answer are not worth a long log line. */
const MAX_POINTER_LENGTH = 200;

const UNDECLARED_STATUS: HeadVerdict = { violation: { kind: 'undeclared_status', response: undefined, pointer: '', keyword: 'responses' } };

/**
 * Checks what the head of an answer shows. `present(name)` says whether the answer the client gets carries a header (the
 * backend's, or one the gateway set itself such as X-Request-Id or Deprecation). `hasBody` is false for HEAD and bodiless
 * statuses: they are checked for status and headers only. A status outside 100-599 is no HTTP status: never covered, not even by
 * `default`; with `defaultCoversErrorsOnly`, `default` covers 4xx and 5xx only, so a success nothing else declares is undeclared.
 */
export function checkAnswerHead(
  responses: DeclaredResponses,
  status: number,
  present: (name: string) => boolean,
  contentType: string | undefined,
  hasBody: boolean,
  defaultCoversErrorsOnly = false,
): HeadVerdict {
  if (status < 100 || status > 599) return UNDECLARED_STATUS;
  const declared = responses.for(status);
  if (declared === undefined || (defaultCoversErrorsOnly && status < 400 && declared.key === 'default')) return UNDECLARED_STATUS;
  for (const name of declared.requiredHeaders) {
    if (!present(name)) return { violation: { kind: 'missing_header', response: declared.key, pointer: '', keyword: 'required', header: name } };
  }
  if (!hasBody || declared.content.length === 0) return { body: undefined };
  const content = contentType === undefined ? undefined : contentFor(declared, mediaTypeOf(contentType));
  if (content === undefined) return { violation: { kind: 'media_type', response: declared.key, pointer: '', keyword: 'content' } };
  return { body: { declared, content } };
}

const ANSWER_PARSE = { maxDepth: MAX_ANSWER_DEPTH, maxValues: MAX_ANSWER_VALUES, spellings: false } as const;

/**
 * An answer's body (decoded, whole; or the parts it arrived in) parsed as its check parses it: without recording number
 * spellings (only requests need them), and not past MAX_ANSWER_DEPTH or MAX_ANSWER_VALUES, so one parse costs bounded CPU. The
 * shadow comparison parses with it too, and reuses the parse its contract check made of staging's body.
 */
export function parseAnswerBody(body: Uint8Array | readonly Uint8Array[]): JsonBodyParse {
  return parseJsonBody(body, ANSWER_PARSE);
}

/**
 * Checks a body (decoded, whole; or the parts it arrived in) by the rule its head gave: undefined when it keeps it. `parse` is
 * parseAnswerBody, or one that also keeps the parse for another reader (the shadow comparison); it is not called for a media
 * type the document gives no schema.
 */
export function checkAnswerBody(
  { declared, content }: BodyRule,
  status: number,
  body: Uint8Array | readonly Uint8Array[],
  parse: (body: Uint8Array | readonly Uint8Array[]) => JsonBodyParse = parseAnswerBody,
): ContractViolation | BodyPastBound | undefined {
  const { validate } = content;
  if (validate === undefined) return undefined;
  const parsed = parse(body);
  if (!parsed.ok) {
    if (parsed.bound !== undefined) return parsed.bound === 'depth' ? 'too_deep' : 'too_many_values';
    return { kind: 'unparseable_body', response: declared.key, pointer: '', keyword: 'json' };
  }
  if (!validate(parsed.value)) {
    const error = validate.errors?.[0];
    return { kind: 'body_schema', response: declared.key, pointer: pointerOf(error, content.memberNames), keyword: error?.keyword ?? 'schema' };
  }
  if (content.isError && (parsed.value as { status: unknown }).status !== status) {
    return { kind: 'error_status_mismatch', response: declared.key, pointer: '/status', keyword: 'const' };
  }
  return undefined;
}

/** An array index in a pointer: kept, it is the body's shape, not its data. */
const INDEX = /^(0|[1-9]\d*)$/;

/**
 * The failing field: Ajv's instance path, plus the member a `required` or `additionalProperties` rule names. A member name the
 * schema does not declare (`memberNames`) is written `*` (memberToken, the rule shadow differences follow too).
 */
function pointerOf(error: ErrorObject | undefined, memberNames: ReadonlySet<string>): string {
  if (error === undefined) return '';
  const params = error.params as { missingProperty?: string; additionalProperty?: string; unevaluatedProperty?: string };
  const member = params.missingProperty ?? params.additionalProperty ?? params.unevaluatedProperty;
  let pointer = '';
  if (error.instancePath !== '') {
    for (const segment of error.instancePath.slice(1).split('/')) {
      pointer += `/${INDEX.test(segment) ? segment : memberToken(segment.replaceAll('~1', '/').replaceAll('~0', '~'), memberNames)}`;
    }
  }
  if (member !== undefined) pointer += `/${memberToken(member, memberNames)}`;
  return pointer.length > MAX_POINTER_LENGTH ? `${pointer.slice(0, MAX_POINTER_LENGTH)}…` : pointer;
}
