// Two answers to one request compared: status, the headers the document declares, and the body, JSON structurally.
import { parseAnswerBody } from '../contract/check-answer.ts';
import { byResponseKey, contentFor, mediaTypeOf } from '../contract/declared-responses.ts';
import type { Operation } from '../contract/operations.ts';
import type { JsonBodyParse } from '../contract/strict-json.ts';
import { codingsOf } from '../proxy/answer-check.ts';
import { diffJson } from './json-diff.ts';
import type { ShadowDifference } from './shadow-outcome.ts';

/** One answer as read for a comparison: its body whole (within the shadow's bounds), never kept past the comparison. */
export interface ReadAnswer {
  status: number;
  /** Lower-case names, as undici and node:http give them. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: Buffer;
  /**
   * The body decoded and parsed by parseAnswerBody, when that was done already (staging's, by its contract check): the
   * comparison reads it instead of parsing the body a second time.
   */
  parsed?: JsonBodyParse;
}

export interface CompareBounds {
  /** Decoded body bytes compared at most; a body past it is compared by its head only. */
  maxBodyBytes: number;
  /** Values visited by the structural comparison at most. */
  maxNodes: number;
}

/** What comparing found, and whether the whole of both answers could be compared. */
export interface Comparison {
  differences: ShadowDifference[];
  /** The bodies were not compared whole (too large, too deep, over the node bound, in a coding not decoded). */
  partial: boolean;
}

const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;

/** The operation's declared headers for a status, compiled once per operation on first use. */
const declaredHeaders = new WeakMap<Operation, (status: number) => readonly string[] | undefined>();

function headersDeclared(operation: Operation, status: number): readonly string[] {
  let lookup = declaredHeaders.get(operation);
  if (lookup === undefined) {
    lookup = byResponseKey(operation.responseHeaders);
    declaredHeaders.set(operation, lookup);
  }
  return lookup(status) ?? [];
}

function fieldValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/** The body decoded from its Content-Encoding, within the bound; undefined when it cannot be (a coding not decoded, too large). */
function decoded(answer: ReadAnswer, maxBodyBytes: number): Buffer | undefined {
  const decoders = codingsOf(answer.headers['content-encoding']);
  if (decoders === undefined) return undefined;
  let body = answer.body;
  for (let at = decoders.length - 1; at >= 0; at--) {
    try {
      body = decoders[at]!(body, { maxOutputLength: maxBodyBytes });
    } catch {
      return undefined;
    }
  }
  return body.length > maxBodyBytes ? undefined : body;
}

const NO_NAMES: ReadonlySet<string> = new Set();

/**
 * The member names the document declares for production's answer (the response its status fell under, the content its media
 * type did): the only names a difference's pointer may carry. None declared: every member name is `*`.
 */
function declaredMemberNames(operation: Operation, production: ReadAnswer): ReadonlySet<string> {
  const declared = operation.responses.for(production.status);
  const contentType = fieldValue(production.headers['content-type']);
  if (declared === undefined || contentType === undefined) return NO_NAMES;
  return contentFor(declared, mediaTypeOf(contentType))?.memberNames ?? NO_NAMES;
}

function isJson(answer: ReadAnswer): boolean {
  const contentType = fieldValue(answer.headers['content-type']);
  return contentType !== undefined && JSON_MEDIA_TYPE.test(mediaTypeOf(contentType));
}

/**
 * What differs in `staging` from `production`: another status is one `status` difference and nothing more (the bodies of two
 * statuses are not comparable); otherwise each declared header whose value differs (`/headers/<name>`), then the body, its
 * pointers naming only the members production's declared response names.
 */
export function compareAnswers(operation: Operation, production: ReadAnswer, staging: ReadAnswer, bounds: CompareBounds): Comparison {
  if (production.status !== staging.status) return { differences: [{ pointer: '/status', kind: 'status' }], partial: false };
  const differences: ShadowDifference[] = [];
  for (const name of headersDeclared(operation, production.status)) {
    if (fieldValue(production.headers[name]) !== fieldValue(staging.headers[name])) differences.push({ pointer: `/headers/${name}`, kind: 'header' });
  }
  if (production.body.length === 0 && staging.body.length === 0) return { differences, partial: false };
  const a = decoded(production, bounds.maxBodyBytes);
  const b = decoded(staging, bounds.maxBodyBytes);
  if (a === undefined || b === undefined) return { differences, partial: true };
  if (!isJson(production) || !isJson(staging)) {
    if (!a.equals(b)) differences.push({ pointer: '', kind: isJson(production) === isJson(staging) ? 'value' : 'type' });
    return { differences, partial: false };
  }
  // The answer check's parse and bounds (decision 0025): a comparison holds the event loop no longer than a check.
  const parsedA = production.parsed ?? parseAnswerBody(a);
  const parsedB = staging.parsed ?? parseAnswerBody(b);
  if (!parsedA.ok || !parsedB.ok) {
    if (!a.equals(b)) differences.push({ pointer: '', kind: 'value' });
    return { differences, partial: (!parsedA.ok && parsedA.bound !== undefined) || (!parsedB.ok && parsedB.bound !== undefined) };
  }
  const diff = diffJson(parsedA.value, parsedB.value, { maxNodes: bounds.maxNodes }, declaredMemberNames(operation, production));
  differences.push(...diff.differences);
  return { differences, partial: diff.truncated };
}
