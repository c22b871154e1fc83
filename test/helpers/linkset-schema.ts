// RFC 9264 §4.2's JSON linkset as a JSON Schema (2020-12), with what an RFC 9727 API catalog adds: the check of the gateway's catalog.
import { Ajv2020 } from 'ajv/dist/2020.js';

/** A URI reference (RFC 3986 §4.1): no character that a URI cannot hold unencoded (space, <, >, ", {, }, |, \, ^, `). */
const URI_REFERENCE = { type: 'string', pattern: '^[^\\s<>"{}|\\\\^`]*$' };

/** Written from the RFC's text, not from the gateway's output: the section each rule comes from is named beside it. */
export const API_CATALOG_LINKSET_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  // §4.2.1: an object with "linkset" as its sole member, an array of link context objects.
  type: 'object',
  required: ['linkset'],
  additionalProperties: false,
  properties: {
    linkset: { type: 'array', items: { $ref: '#/$defs/linkContext' } },
  },
  $defs: {
    // §4.2.2: "anchor" (a URI reference), then one member per relation type, whose value is an array of link target
    // objects even for one target. RFC 9727 §4.1: a catalog entry names its API (the anchor) and links it somewhere.
    linkContext: {
      type: 'object',
      required: ['anchor'],
      minProperties: 2,
      properties: { anchor: URI_REFERENCE },
      // A registered relation type's name (RFC 8288 §2.1.1: lower case), or an extension relation type's URI (§2.1.2).
      propertyNames: { pattern: '^(?:anchor|[a-z][a-z0-9.-]*|[A-Za-z][A-Za-z0-9+.-]*:[^\\s]+)$' },
      additionalProperties: { type: 'array', minItems: 1, items: { $ref: '#/$defs/linkTarget' } },
    },
    // §4.2.3: "href" required, a URI reference; §4.2.4.1: the target attributes RFC 8288 defines, "hreflang" an array,
    // "media", "type" and "title" strings, "title*" as §4.2.4.2 says; §4.2.4.3: any other attribute an array.
    linkTarget: {
      type: 'object',
      required: ['href'],
      properties: {
        href: URI_REFERENCE,
        type: { type: 'string', pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:\\s*;.*)?$" },
        media: { type: 'string' },
        title: { type: 'string' },
        hreflang: { type: 'array', minItems: 1, items: { type: 'string' } },
        'title*': { type: 'array', minItems: 1, items: { $ref: '#/$defs/internationalized' } },
      },
      additionalProperties: { type: 'array', minItems: 1 },
    },
    internationalized: {
      type: 'object',
      required: ['value'],
      properties: { value: { type: 'string' }, language: { type: 'string' } },
      additionalProperties: false,
    },
  },
} as const;

/** The media type of a catalog: the linkset's, with the API catalog profile (RFC 9727 §4.2: SHOULD, so optional here). */
export const API_CATALOG_CONTENT_TYPE = /^application\/linkset\+json(?:;\s*profile="https:\/\/www\.rfc-editor\.org\/info\/rfc9727")?$/;

/** Why `value` is not an API catalog linkset, or undefined when it is one. */
export function linksetProblem(value: unknown): string | undefined {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  const validate = ajv.compile(API_CATALOG_LINKSET_SCHEMA);
  return validate(value) ? undefined : ajv.errorsText(validate.errors);
}
