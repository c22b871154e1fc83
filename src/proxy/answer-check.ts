// The backend's answers checked against the document (config `contractResponses`): which answers are checked, how, and what was found.
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { ContractResponseMode } from '../config/schema.ts';
import { type BodyRule, checkAnswerBody, type ContractViolation } from '../contract/check-answer.ts';
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
}

/** Why an answer that was to be checked could not be: its body was over the bound, or in a coding the gateway does not decode. */
export type UncheckedReason = 'too_large' | 'encoding';
export const UNCHECKED_REASONS: readonly UncheckedReason[] = ['too_large', 'encoding'];

/** What checking one answer found: on the exchange's slice of the request record, read at completion. */
export type AnswerVerdict =
  | { result: 'valid' }
  | { result: 'violation'; violation: ContractViolation /** The client got 502 upstream_contract_violation instead. */; enforced: boolean }
  | { result: 'unchecked'; reason: UncheckedReason };

export const VALID: AnswerVerdict = { result: 'valid' };
export const TOO_LARGE: AnswerVerdict = { result: 'unchecked', reason: 'too_large' };
const UNKNOWN_CODING: AnswerVerdict = { result: 'unchecked', reason: 'encoding' };

export interface AnswerCheckSettings {
  mode: ContractResponseMode;
  /** The share of answers `report` checks, 0 to 1. */
  sample: number;
  maxBodyBytes: number;
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
  return function answerCheckFor(operation, method) {
    if (!everyOne && random() >= sample) return undefined;
    return { enforce, operation, headOnly: method === 'HEAD', maxBodyBytes };
  };
}

/**
 * Checks a whole body against what its head fell under, decoding its Content-Encoding first (bounded: a body that inflates past the
 * bound is relayed unchecked, like one that arrives over it).
 */
export function checkBody(check: AnswerCheck, rule: BodyRule, status: number, contentEncoding: string | string[] | undefined, body: Buffer): AnswerVerdict {
  let decoded = body;
  if (contentEncoding !== undefined) {
    const coding = String(contentEncoding).trim().toLowerCase();
    if (coding !== '' && coding !== 'identity') {
      const decode = DECODERS[coding];
      if (decode === undefined) return UNKNOWN_CODING;
      try {
        decoded = decode(body, { maxOutputLength: check.maxBodyBytes });
      } catch (error) {
        if (error instanceof RangeError) return TOO_LARGE;
        return violation(check, { kind: 'unparseable_body', response: rule.declared.key, pointer: '', keyword: 'content-encoding' });
      }
    }
  }
  const found = checkAnswerBody(rule, status, decoded);
  return found === undefined ? VALID : violation(check, found);
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
