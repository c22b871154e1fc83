// What a client is told when a value breaks the document's schema, row by row, from ajv's first error.
import type { ErrorObject } from 'ajv';
import { describe, expect, it } from 'vitest';
import { describeSchemaError } from '../../../src/contract/schema-validator.ts';

const error = (keyword: string, instancePath: string, params: Record<string, unknown>, message?: string): ErrorObject => ({
  keyword,
  instancePath,
  schemaPath: `#/${keyword}`,
  params,
  ...(message === undefined ? {} : { message }),
});

describe('describeSchemaError', () => {
  it.each([
    ['no error at hand', undefined, 'Request body is invalid'],
    ['a missing field at the top', error('required', '', { missingProperty: 'name' }), "Request body field 'name' is required"],
    ['a missing nested field', error('required', '/owner', { missingProperty: 'id' }), "Request body field 'owner.id' is required"],
    [
      'a value outside an enum',
      error('enum', '/status', { allowedValues: ['available', 'sold'] }),
      "Request body field 'status' must be one of: available, sold",
    ],
    ['a whole body outside an enum', error('enum', '', { allowedValues: [1, 2] }), 'Request body must be one of: 1, 2'],
    ['an integer outside int32', error('format', '/id', { format: 'int32' }), "Request body field 'id' must be an integer in the int32 range"],
    ['an integer outside int64', error('format', '/id', { format: 'int64' }), "Request body field 'id' must be an integer in the int64 range"],
    [
      "another format, in ajv's words",
      error('format', '/email', { format: 'email' }, 'must match format "email"'),
      'Request body field \'email\' must match format "email"',
    ],
    ['an array item, by index', error('maximum', '/tags/0', { limit: 9999 }, 'must be <= 9999'), "Request body field 'tags.0' must be <= 9999"],
    ['JSON pointer escapes undone', error('type', '/a~1b/c~0d', { type: 'string' }, 'must be string'), "Request body field 'a/b.c~d' must be string"],
    ['an error without a message', error('type', '', { type: 'object' }), 'Request body is invalid'],
  ])('%s', (_case, schemaError, message) => {
    expect(describeSchemaError(schemaError, 'Request body')).toBe(message);
  });

  it("names a parameter by the subject it is given: Path parameter 'animalId'", () => {
    expect(describeSchemaError(error('maximum', '', { limit: 9999 }, 'must be <= 9999'), "Path parameter 'animalId'")).toBe(
      "Path parameter 'animalId' must be <= 9999",
    );
  });
});
