// Which integers written as 1.0, 1e2 or -0 sit where the schema asks for an integer.
import { describe, expect, it } from 'vitest';
import { describeNonCanonicalInteger, findNonCanonicalInteger } from '../../../src/contract/integer-spelling.ts';
import { createSchemaValidator } from '../../../src/contract/schema-validator.ts';
import { parseJsonBody } from '../../../src/contract/strict-json.ts';

const ajv = createSchemaValidator({
  Id: { type: 'integer', format: 'int64' },
  Pet: {
    type: 'object',
    properties: {
      categoryId: { $ref: '#/components/schemas/Id' },
      count: { type: 'integer' },
      weight: { type: 'number' },
      size: { type: 'number', enum: [1, 2] },
      tags: { type: 'array', items: { type: 'integer', format: 'int32' } },
      either: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
      numeric: { anyOf: [{ type: 'integer' }, { type: 'number', minimum: 10 }] },
      'a/b~c': { type: 'integer' },
    },
  },
});
const validatePet = ajv.compile({ $ref: 'contract#/$defs/Pet' });

/** The spelling refused for `body`, or undefined when it is accepted. */
function refused(body: string, validate = validatePet): string | undefined {
  const parsed = parseJsonBody(Buffer.from(body));
  if (!parsed.ok) throw new Error(parsed.reason);
  expect(validate(parsed.value), body).toBe(true);
  const before = JSON.stringify(parsed.value);
  const found = findNonCanonicalInteger(validate, parsed.value, parsed.nonCanonicalIntegers);
  expect(JSON.stringify(parsed.value), 'the value is restored').toBe(before);
  return found && describeNonCanonicalInteger(found, 'Request body');
}

describe('findNonCanonicalInteger', () => {
  it.each([
    ['{"categoryId":1e2}', "Request body field 'categoryId' must be written as a plain integer, not 1e2"],
    ['{"categoryId":1.0}', "Request body field 'categoryId' must be written as a plain integer, not 1.0"],
    ['{"categoryId":-0}', "Request body field 'categoryId' must be written as a plain integer, not -0"],
    ['{"categoryId":9.2e18}', "Request body field 'categoryId' must be written as a plain integer, not 9.2e18"],
    ['{"count":10E0}', "Request body field 'count' must be written as a plain integer, not 10E0"],
    ['{"tags":[1,2.0]}', "Request body field 'tags.1' must be written as a plain integer, not 2.0"],
    ['{"either":3.0}', "Request body field 'either' must be written as a plain integer, not 3.0"],
    ['{"weight":1.0,"extra":[1e2],"count":-0}', "Request body field 'count' must be written as a plain integer, not -0"],
    ['{"size":1.0,"categoryId":1e0}', "Request body field 'categoryId' must be written as a plain integer, not 1e0"],
    ['{"a/b~c":1.0}', "Request body field 'a/b~c' must be written as a plain integer, not 1.0"],
    // The probe of both fails first on size's enum; each is then tried alone.
    ['{"size":1.0,"either":3.0}', "Request body field 'either' must be written as a plain integer, not 3.0"],
  ])('refuses %s', (body, message) => {
    expect(refused(body)).toBe(message);
  });

  it.each([
    '{"categoryId":1,"count":-12}',
    '{"weight":1.0}',
    '{"weight":-0}',
    '{"weight":1e2}',
    '{"size":1.0}',
    '{"numeric":10.0}',
    '{"size":2.0,"numeric":10.0,"weight":3e0}',
    '{"extra":1.0,"more":{"deep":[-0,1e2]}}',
    '{"__proto__":1.0,"more":{"__proto__":[2.0]}}',
  ])('accepts %s', (body) => {
    expect(refused(body)).toBeUndefined();
  });

  it('cuts a long spelling short in the message', () => {
    const literal = `1.${'0'.repeat(100)}`;
    expect(refused(`{"count":${literal}}`)).toBe(`Request body field 'count' must be written as a plain integer, not 1.${'0'.repeat(37)}…`);
  });

  it('refuses a body that is one integer-typed number', () => {
    expect(refused('1.0', ajv.compile({ type: 'integer' }))).toBe('Request body must be written as a plain integer, not 1.0');
    expect(refused('1.0', ajv.compile({ type: 'number' }))).toBeUndefined();
  });
});
