// An interface document as a client reads it, and the check that an answer is one it declares: the contract tests of the public and admin documents.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createSchemaValidator, rewriteRefs } from '../../src/contract/schema-validator.ts';
import type { RawResponse } from './raw-request.ts';

interface Reference {
  $ref: string;
}
interface HeaderObject {
  required?: boolean;
  schema: unknown;
}
interface ResponseObject {
  headers?: Record<string, HeaderObject | Reference>;
  content?: Record<string, { schema: unknown }>;
}
interface DocumentOperation {
  method: string;
  path: string;
  responses: Record<string, ResponseObject | Reference>;
}

/** One answer provoked for one (operation, response) of the document. */
export interface ContractCase {
  operation: string;
  /** The response of the document the answer is checked against: a status, or `default`. */
  declared: number | 'default';
  /** The status expected; `declared` unless that is `default`. */
  status?: number;
  /** Optional headers the document declares that this answer, by design, does not carry. */
  absent?: readonly string[];
}

/** A case with the request that provokes it. */
export interface ProvokedCase extends ContractCase {
  why: string;
  send(): Promise<RawResponse>;
}

/** Framing and the representation's own fields: HTTP's business, not the interface's. */
const TRANSPORT_HEADERS = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'transfer-encoding']);

export interface InterfaceDocument {
  /** Every `operationId status` the document declares (`default` included). */
  declared(): string[];
  /** Checks status, headers and body of `res` against the document's response for the case. */
  check(testCase: ContractCase, res: RawResponse): void;
}

export function readInterfaceDocument(url: URL): InterfaceDocument {
  const document = parseYaml(readFileSync(url, 'utf8')) as {
    paths: Record<string, Record<string, { operationId?: string; responses?: DocumentOperation['responses'] }>>;
    components: { schemas: Record<string, unknown> };
  };

  /** Follows a local reference (`#/components/...`) to what it names. */
  function deref<T>(value: T | Reference): T {
    if (typeof value !== 'object' || value === null || !('$ref' in value)) return value;
    const target = value.$ref
      .slice(2)
      .split('/')
      .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key.replaceAll('~1', '/').replaceAll('~0', '~')], document);
    if (target === undefined) throw new Error(`the document has no ${value.$ref}`);
    return deref(target as T | Reference);
  }

  const operations = new Map<string, DocumentOperation>();
  for (const [path, pathItem] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(pathItem)) {
      if (typeof operation !== 'object' || typeof operation.operationId !== 'string') continue;
      operations.set(operation.operationId, { method: method.toUpperCase(), path, responses: operation.responses ?? {} });
    }
  }

  const ajv = createSchemaValidator(document.components.schemas);

  /** Why the value breaks the schema, or undefined when it does not. */
  function schemaProblem(schema: unknown, value: unknown): string | undefined {
    const validate = ajv.compile(rewriteRefs(schema) as object);
    return validate(value) ? undefined : ajv.errorsText(validate.errors);
  }

  /** A header's text as its schema types it (OpenAPI's `simple` style): integers are numbers. */
  function headerValue(schema: unknown, text: string): unknown {
    const type = (deref(schema as object) as { type?: unknown }).type;
    return (type === 'integer' || type === 'number') && /^-?\d+$/.test(text) ? Number(text) : text;
  }

  return {
    declared: () => [...operations].flatMap(([id, operation]) => Object.keys(operation.responses).map((status) => `${id} ${status}`)),
    check(testCase, res) {
      const operation = operations.get(testCase.operation)!;
      expect(res.status, res.body).toBe(testCase.status ?? testCase.declared);
      const declaredStatuses = Object.keys(operation.responses);
      // The answer is checked against its own status's response; `default` only covers statuses no response names.
      expect(declaredStatuses, `${testCase.operation} declares ${res.status} or covers it with default`).toContain(String(testCase.declared));
      if (testCase.declared === 'default') expect(declaredStatuses).not.toContain(String(res.status));
      const response = deref(operation.responses[String(testCase.declared)]!);

      const declaredHeaders = new Map(Object.entries(response.headers ?? {}).map(([name, header]) => [name.toLowerCase(), deref(header)]));
      for (const [name, header] of declaredHeaders) {
        const value = res.headers[name];
        if (testCase.absent?.includes(name)) {
          expect(header.required, `${name} is exempted here, so the document must not require it`).not.toBe(true);
          expect(value, `${name} is absent from this answer by design`).toBeUndefined();
          continue;
        }
        expect(value, `the ${name} header`).toBeTypeOf('string');
        expect(schemaProblem(header.schema, headerValue(header.schema, value as string)), `${name}: ${String(value)}`).toBeUndefined();
      }
      const undeclared = Object.keys(res.headers).filter((name) => !TRANSPORT_HEADERS.has(name) && !declaredHeaders.has(name));
      expect(undeclared, 'headers the answer carries and the document does not declare').toEqual([]);

      if (response.content === undefined) {
        // A response without content (204): no body, and nothing saying there is one.
        expect(res.body).toBe('');
        expect(res.headers['content-type']).toBeUndefined();
        return;
      }
      const mediaType = String(res.headers['content-type']).split(';', 1)[0]!.trim();
      expect(Object.keys(response.content), 'the media type of the body').toContain(mediaType);
      const body: unknown = JSON.parse(res.body);
      expect(schemaProblem(response.content[mediaType]!.schema, body), res.body).toBeUndefined();
      // The interface: an Error's `status` repeats the HTTP status.
      if (res.status >= 400) expect((body as { status: unknown }).status).toBe(res.status);
    },
  };
}

/** The contract test's two suites: each case's answer checked against the document, and the cases covering exactly what it declares. */
export function describeContract(subject: string, document: InterfaceDocument, cases: readonly ProvokedCase[]): void {
  describe(`each answer ${subject} gives is the one its document declares`, () => {
    it.each(cases.map((testCase) => [testCase.operation, testCase.declared, testCase.why, testCase] as const))(
      '%s %s: %s',
      async (_operation, _declared, _why, testCase) => {
        document.check(testCase, await testCase.send());
      },
    );
  });

  describe('the cases and the document', () => {
    it('exercise every (operation, status) the document declares, and no other', () => {
      const exercised = new Set(cases.map((testCase) => `${testCase.operation} ${testCase.declared}`));
      expect([...exercised].sort()).toEqual(document.declared().sort());
    });
  });
}
