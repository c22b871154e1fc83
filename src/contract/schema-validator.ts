// One JSON Schema 2020-12 validator for the document's schemas, with the OpenAPI integer formats.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject } from 'ajv';

const INT64_MIN = -(2 ** 63);
const INT64_LIMIT = 2 ** 63; // exclusive; beyond double precision the body parser decides on the digits (strict-json.ts)

export function createSchemaValidator(schemas: Readonly<Record<string, unknown>>): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: false, strict: true, useDefaults: false });
  // OpenAPI annotations that JSON Schema does not define; they carry no validation.
  ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs']);
  ajv.addFormat('int32', {
    type: 'number',
    validate: (value: number) => Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31,
  });
  ajv.addFormat('int64', {
    type: 'number',
    validate: (value: number) => Number.isInteger(value) && value >= INT64_MIN && value < INT64_LIMIT,
  });
  ajv.addSchema({ $id: 'contract', $defs: rewriteRefs(schemas) });
  return ajv;
}

/** The document refers to `#/components/schemas/X`; inside the validator those live at `contract#/$defs/X`. */
export function rewriteRefs<T>(value: T): T {
  if (Array.isArray(value)) return value.map(rewriteRefs) as T;
  if (typeof value !== 'object' || value === null) return value;
  const result: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    result[key] =
      key === '$ref' && typeof inner === 'string' && inner.startsWith('#/components/schemas/')
        ? `contract#/$defs/${inner.slice('#/components/schemas/'.length)}`
        : rewriteRefs(inner);
  }
  return result as T;
}

/** Says what is wrong in words that name the field, e.g. `'categoryId' must be integer`. */
export function describeSchemaError(error: ErrorObject | undefined, subject: string): string {
  if (!error) return `${subject} is invalid`;
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .join('.');
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return `${subject} field '${path ? `${path}.` : ''}${missing}' is required`;
  }
  if (error.keyword === 'enum') {
    const allowed = (error.params as { allowedValues: unknown[] }).allowedValues.join(', ');
    return `${subject}${path ? ` field '${path}'` : ''} must be one of: ${allowed}`;
  }
  if (error.keyword === 'format' && /^int(32|64)$/.test(String((error.params as { format: string }).format))) {
    const format = (error.params as { format: string }).format;
    return `${subject}${path ? ` field '${path}'` : ''} must be an integer in the ${format} range`;
  }
  return `${subject}${path ? ` field '${path}'` : ''} ${error.message ?? 'is invalid'}`;
}
