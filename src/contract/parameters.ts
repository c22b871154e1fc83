// Parses query and path parameter text strictly by the schema's type before the schema checks bounds.
import type { ParameterSpec } from './operations.ts';

type ParseResult = ReturnType<ParameterSpec['parse']>;

const INTEGER_TEXT = /^(?:0|-?[1-9]\d*)$/;
const NUMBER_TEXT = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;

/**
 * `1.5`, `1e2`, `0x10`, ` 7` or '' is not an integer, whatever Number() says; leading zeros and `-0` are refused (one value, one
 * spelling). Integers beyond double precision are parsed on their digits for the int64 range check.
 */
export function createParameterParser(schema: unknown): ParameterSpec['parse'] {
  const type = typeof schema === 'object' && schema !== null ? (schema as { type?: unknown }).type : undefined;
  switch (type) {
    case 'integer':
      return function parseInteger(raw): ParseResult {
        if (!INTEGER_TEXT.test(raw)) return { ok: false, reason: 'must be an integer' };
        const value = Number(raw);
        if (Number.isSafeInteger(value)) return { ok: true, value };
        const exact = BigInt(raw);
        const inInt64 = exact >= -(2n ** 63n) && exact < 2n ** 63n;
        // Beyond double precision the schema cannot see the exact value; the int64 range is decided here.
        if (!inInt64) return { ok: false, reason: 'must be an integer in the int64 range' };
        return { ok: true, value: value < 0 ? Number.MIN_SAFE_INTEGER : Number.MAX_SAFE_INTEGER };
      };
    case 'number':
      return function parseNumber(raw): ParseResult {
        return NUMBER_TEXT.test(raw) ? { ok: true, value: Number(raw) } : { ok: false, reason: 'must be a number' };
      };
    case 'boolean':
      return function parseBoolean(raw): ParseResult {
        if (raw === 'true') return { ok: true, value: true };
        if (raw === 'false') return { ok: true, value: false };
        return { ok: false, reason: 'must be true or false' };
      };
    default:
      return function parseString(raw): ParseResult {
        return { ok: true, value: raw };
      };
  }
}
