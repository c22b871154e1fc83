// Strict parsing of parameter text by schema type.
import { describe, expect, it } from 'vitest';
import { createParameterParser } from '../../../src/contract/parameters.ts';

const integer = createParameterParser({ type: 'integer', format: 'int64' });

describe('integer parameters', () => {
  it.each([
    ['0', 0],
    ['7', 7],
    ['-12', -12],
    ['9007199254740991', 9007199254740991],
  ])('parses %s', (raw, value) => {
    expect(integer(raw)).toEqual({ ok: true, value });
  });

  it.each(['', ' 7', '7 ', '+7', '07', '1.5', '1.0', '1e2', '0x10', 'abc', '-', 'Infinity', 'NaN'])('refuses %j', (raw) => {
    expect(integer(raw)).toEqual({ ok: false, reason: 'must be an integer' });
  });

  it('decides the int64 range on the digits, beyond double precision', () => {
    expect(integer('9223372036854775807').ok).toBe(true);
    expect(integer('-9223372036854775808').ok).toBe(true);
    expect(integer('9223372036854775808')).toEqual({ ok: false, reason: 'must be an integer in the int64 range' });
    expect(integer('-9223372036854775809')).toEqual({ ok: false, reason: 'must be an integer in the int64 range' });
  });
});

describe('other parameter types', () => {
  it('passes strings through for the schema to check', () => {
    expect(createParameterParser({ type: 'string' })('sold')).toEqual({ ok: true, value: 'sold' });
  });

  it('parses booleans strictly', () => {
    const boolean = createParameterParser({ type: 'boolean' });
    expect(boolean('true')).toEqual({ ok: true, value: true });
    expect(boolean('1')).toEqual({ ok: false, reason: 'must be true or false' });
  });

  it('parses plain decimal numbers only', () => {
    const number = createParameterParser({ type: 'number' });
    expect(number('1.5')).toEqual({ ok: true, value: 1.5 });
    expect(number('1e3')).toEqual({ ok: false, reason: 'must be a number' });
  });
});
