// The backend's answers checked against the document (config `contractResponses`): which answers are checked, how, and what was found.
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { ContractResponseMode } from '../config/schema.ts';
import { type BodyRule, checkAnswerBody, type ContractViolation, parseAnswerBody } from '../contract/check-answer.ts';
import type { JsonBodyParse } from '../contract/strict-json.ts';
import type { Operation } from '../contract/operations.ts';

/** How one answer is checked: handed to the exchange with the request; absent, the answer is relayed unchecked. */
export interface AnswerCheck {
  /** Held until checked, and a violating answer never relayed (502 upstream_contract_violation); false: checked as it streams. */
  enforce: boolean;
  operation: Operation;
  /** A HEAD request: its answer is checked for status and headers only. */
  headOnly: boolean;
  /** Larger bodies (decoded) are relayed unchecked. */
  maxBodyBytes: number;
  /** A response keyed `default` covers error statuses only: an undeclared 2xx, 3xx or 304 is `undeclared_status`. */
  defaultCoversErrorsOnly: boolean;
}

/**
 * Why an answer that was to be checked could not be: its body was over the size bound, nested past the depth bound, made of more
 * values than the value bound, or in a coding the gateway does not decode (or codings stacked past MAX_CODINGS).
 */
export type UncheckedReason = 'too_large' | 'too_deep' | 'too_many_values' | 'encoding';
export const UNCHECKED_REASONS: readonly UncheckedReason[] = ['too_large', 'too_deep', 'too_many_values', 'encoding'];

/** What checking one answer found: on the exchange's slice of the request record, read at completion. */
export type AnswerVerdict =
  | { result: 'valid' }
  | { result: 'violation'; violation: ContractViolation /** The client got 502 upstream_contract_violation instead. */; enforced: boolean }
  | { result: 'unchecked'; reason: UncheckedReason };

export const VALID: AnswerVerdict = { result: 'valid' };
export const TOO_LARGE: AnswerVerdict = { result: 'unchecked', reason: 'too_large' };
const UNKNOWN_CODING: AnswerVerdict = { result: 'unchecked', reason: 'encoding' };
const PAST_BOUND: Readonly<Record<'too_deep' | 'too_many_values', AnswerVerdict>> = {
  too_deep: { result: 'unchecked', reason: 'too_deep' },
  too_many_values: { result: 'unchecked', reason: 'too_many_values' },
};
/** Codings applied one over another that are decoded, at most (`gzip, gzip`); more are not checked (`encoding`). */
const MAX_CODINGS = 2;

export interface AnswerCheckSettings {
  mode: ContractResponseMode;
  /** The share of answers `report` checks, 0 to 1. */
  sample: number;
  maxBodyBytes: number;
  /** What `default` covers (config `contractResponses.defaultCovers`); unset: `errors` under enforce, `all` under report. */
  defaultCovers?: 'all' | 'errors' | undefined;
}

/** Decides per request whether and how its answer is checked; `random` draws the report mode's sample. */
export function createAnswerChecks(
  settings: AnswerCheckSettings,
  random: () => number = Math.random,
): (operation: Operation, method: string) => AnswerCheck | undefined {
  const { mode, sample, maxBodyBytes } = settings;
  if (mode === 'off' || (mode === 'report' && sample === 0)) return () => undefined;
  const enforce = mode === 'enforce';
  const everyOne = enforce || sample >= 1;
  const defaultCoversErrorsOnly = (settings.defaultCovers ?? (enforce ? 'errors' : 'all')) === 'errors';
  return function answerCheckFor(operation, method) {
    if (!everyOne && random() >= sample) return undefined;
    return { enforce, operation, headOnly: method === 'HEAD', maxBodyBytes, defaultCoversErrorsOnly };
  };
}

/**
 * The codings of a Content-Encoding field, in the order they were applied (RFC 9110 §8.4): one list over every line of the field,
 * `identity` and empty members left out. Undefined when one is not decoded here, or more than MAX_CODINGS are stacked.
 */
export function codingsOf(contentEncoding: string | string[] | undefined): Decoder[] | undefined {
  if (contentEncoding === undefined) return [];
  const decoders: Decoder[] = [];
  for (const member of String(contentEncoding).split(',')) {
    const coding = member.trim().toLowerCase();
    if (coding === '' || coding === 'identity') continue;
    const decode = DECODERS[coding];
    if (decode === undefined || decoders.length === MAX_CODINGS) return undefined;
    decoders.push(decode);
  }
  return decoders;
}

/**
 * Checks a whole body (or the parts it arrived in) against what its head fell under, decoding its Content-Encoding first, the last coding applied first (bounded:
 * a body that inflates past the bound at any step is relayed unchecked, like one that arrives over it). `parse`: as checkAnswerBody's.
 */
export function checkBody(
  check: AnswerCheck,
  rule: BodyRule,
  status: number,
  contentEncoding: string | string[] | undefined,
  body: Buffer | readonly Buffer[],
  parse: (body: Uint8Array | readonly Uint8Array[]) => JsonBodyParse = parseAnswerBody,
): AnswerVerdict {
  const decoders = codingsOf(contentEncoding);
  if (decoders === undefined) return UNKNOWN_CODING;
  // Not encoded, the parts are parsed as they arrived: a body stopped at a bound in its first kilobytes is never joined.
  if (decoders.length === 0) return verdictOf(check, checkAnswerBody(rule, status, body, parse));
  let decoded = Buffer.isBuffer(body) ? body : Buffer.concat(body);
  for (let at = decoders.length - 1; at >= 0; at--) {
    try {
      decoded = decoders[at]!(decoded, { maxOutputLength: check.maxBodyBytes });
    } catch (error) {
      if (error instanceof RangeError) return TOO_LARGE;
      return violation(check, { kind: 'unparseable_body', response: rule.declared.key, pointer: '', keyword: 'content-encoding' });
    }
  }
  return verdictOf(check, checkAnswerBody(rule, status, decoded, parse));
}

function verdictOf(check: AnswerCheck, found: ReturnType<typeof checkAnswerBody>): AnswerVerdict {
  if (found === undefined) return VALID;
  return typeof found === 'string' ? PAST_BOUND[found] : violation(check, found);
}

/**
 * Whether the client gets 502 upstream_contract_violation instead of the answer: under enforce, a violation, or a coding the check
 * cannot see through (stacked codings are how a broken answer would pass unchecked). One past the size, depth or value bound is relayed.
 */
export function refusedUnderEnforce(check: AnswerCheck | undefined, verdict: AnswerVerdict | undefined): boolean {
  if (check === undefined || !check.enforce || verdict === undefined) return false;
  return verdict.result === 'violation' || (verdict.result === 'unchecked' && verdict.reason === 'encoding');
}

export function violation(check: AnswerCheck, found: ContractViolation): AnswerVerdict {
  return { result: 'violation', violation: found, enforced: check.enforce };
}

type Decoder = (body: Buffer, options: { maxOutputLength: number }) => Buffer;

/** The codings HTTP registers that node:zlib decodes (RFC 9110 §8.4.1, RFC 7932); `deflate` is the zlib format. */
const DECODERS: Readonly<Record<string, Decoder>> = {
  gzip: gunzipSync,
  'x-gzip': gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
};
