// Whether an answer keeps the document's promise: each rule on the project's own document, one case each.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type BodyRule, checkAnswerBody, checkAnswerHead, type HeadVerdict, MAX_ANSWER_DEPTH, MAX_ANSWER_VALUES } from '../../../src/contract/check-answer.ts';
import { loadContract } from '../../../src/contract/compile-contract.ts';

const contract = loadContract(fileURLToPath(new URL('../../../config/petstore.openapi.yaml', import.meta.url)));
const listPets = contract.byId.get('listPets')!;
const getPet = contract.byId.get('getPet')!;

/** What the gateway sets on every answer before the backend's arrives. */
const setByGateway = (name: string) => name === 'x-request-id';
const body = (text: string) => Buffer.from(text);

function ruleOf(verdict: HeadVerdict): BodyRule {
  if (verdict.violation !== undefined) throw new Error(`head broke the document: ${verdict.violation.kind}`);
  if (verdict.body === undefined) throw new Error('no body to check');
  return verdict.body;
}

function checkListPets(status: number, text: string) {
  return checkAnswerBody(ruleOf(checkAnswerHead(listPets.responses, status, setByGateway, 'application/json', true)), status, body(text));
}

describe('checkAnswerHead', () => {
  const undeclared = { kind: 'undeclared_status', response: undefined, pointer: '', keyword: 'responses' };
  const statusOf = (status: number, errorsOnly: boolean) =>
    checkAnswerHead(listPets.responses, status, () => true, 'application/json', true, errorsOnly).violation;

  it.each([999, 600, 99, 0])('never covers %i, which is no HTTP status, not even by `default`', (status) => {
    expect(statusOf(status, false)).toEqual(undeclared);
    expect(statusOf(status, true)).toEqual(undeclared);
  });

  it.each([201, 204, 302, 304])('with `default` covering errors only, an undeclared %i is undeclared_status', (status) => {
    expect(statusOf(status, true)).toEqual(undeclared);
    expect(statusOf(status, false)).toBeUndefined();
  });

  it.each([418, 503])('with `default` covering errors only, %i still falls under it', (status) => {
    expect(statusOf(status, true)).toBeUndefined();
  });

  it('falls back to `default` for a status the operation does not list', () => {
    expect(listPets.responses.for(418)?.key).toBe('default');
  });

  it('finds the content of a declared media type, parameters and case aside', () => {
    const verdict = checkAnswerHead(listPets.responses, 200, setByGateway, 'Application/JSON; charset=utf-8', true);
    expect(verdict.violation).toBeUndefined();
    expect(ruleOf(verdict).content.mediaType).toBe('application/json');
  });

  it('calls a media type the response does not declare a media_type violation', () => {
    expect(checkAnswerHead(listPets.responses, 200, setByGateway, 'text/html', true).violation).toEqual({
      kind: 'media_type',
      response: '200',
      pointer: '',
      keyword: 'content',
    });
  });

  it('calls a body without any Content-Type a media_type violation', () => {
    expect(checkAnswerHead(listPets.responses, 200, setByGateway, undefined, true).violation?.kind).toBe('media_type');
  });

  it('checks no media type where there is no body (HEAD, 204, 304)', () => {
    expect(checkAnswerHead(listPets.responses, 200, setByGateway, 'text/html', false)).toEqual({ body: undefined });
  });

  it('names a required header the answer lacks', () => {
    expect(checkAnswerHead(listPets.responses, 429, setByGateway, 'application/json', true).violation).toEqual({
      kind: 'missing_header',
      response: '429',
      pointer: '',
      keyword: 'required',
      header: 'retry-after',
    });
  });

  it('counts a header the gateway sets itself as present', () => {
    const present = (name: string) => ['x-request-id', 'deprecation', 'sunset', 'link'].includes(name);
    expect(checkAnswerHead(getPet.responses, 200, present, 'application/json', true).violation).toBeUndefined();
  });
});

describe('checkAnswerBody', () => {
  it('passes a page of Pets', () => {
    expect(checkListPets(200, '[{"id":1,"name":"Rex","categoryId":2,"status":"sold"}]')).toBeUndefined();
  });

  it('points at a missing required field', () => {
    expect(checkListPets(200, '[{"id":1,"name":"Rex","categoryId":2},{"id":2,"name":"Tom"}]')).toEqual({
      kind: 'body_schema',
      response: '200',
      pointer: '/1/categoryId',
      keyword: 'required',
    });
  });

  it('points at a value outside the enum', () => {
    expect(checkListPets(200, '[{"id":1,"name":"Rex","categoryId":2,"status":"lost"}]')).toMatchObject({ pointer: '/0/status', keyword: 'enum' });
  });

  it('points at an int64 out of range', () => {
    expect(checkListPets(200, '[{"id":1,"name":"Rex","categoryId":-9223372036854775809}]')).toMatchObject({ pointer: '/0/categoryId', keyword: 'format' });
  });

  it('calls invalid JSON unparseable_body', () => {
    expect(checkListPets(200, '[{"id":1,')).toMatchObject({ kind: 'unparseable_body', keyword: 'json' });
  });

  it('calls an Error whose status is not the answer’s error_status_mismatch', () => {
    expect(checkListPets(503, '{"code":"service_unavailable","message":"later","status":500}')).toEqual({
      kind: 'error_status_mismatch',
      response: '503',
      pointer: '/status',
      keyword: 'const',
    });
  });

  it('passes an Error whose status is the answer’s', () => {
    expect(checkListPets(503, '{"code":"service_unavailable","message":"later","status":503}')).toBeUndefined();
  });

  /** The listPets rule with a validator that fails as given (a schema stricter than the document's). */
  function failingWith(error: Record<string, unknown>, memberNames?: ReadonlySet<string>) {
    const rule = ruleOf(checkAnswerHead(listPets.responses, 200, setByGateway, 'application/json', true));
    const validate = Object.assign(() => false, { errors: [{ schemaPath: '', ...error }] }) as unknown as NonNullable<BodyRule['content']['validate']>;
    const found = checkAnswerBody({ ...rule, content: { ...rule.content, validate, ...(memberNames ? { memberNames } : {}) } }, 200, body('[{}]'));
    return typeof found === 'object' ? found.pointer : found;
  }

  it('escapes a declared member name in its pointer as RFC 6901 says', () => {
    expect(failingWith({ keyword: 'additionalProperties', instancePath: '/0', params: { additionalProperty: 'a/b~c' } }, new Set(['a/b~c']))).toBe(
      '/0/a~1b~0c',
    );
  });

  it('writes a member name the schema does not declare as *, in the path and as the member a rule names', () => {
    expect(failingWith({ keyword: 'additionalProperties', instancePath: '/0', params: { additionalProperty: 'ann@example.com' } })).toBe('/0/*');
    expect(failingWith({ keyword: 'type', instancePath: '/0/ann@example.com/name', params: {} })).toBe('/0/*/name');
  });

  it('keeps the names the schema declares, through its references', () => {
    expect(ruleOf(checkAnswerHead(listPets.responses, 200, setByGateway, 'application/json', true)).content.memberNames).toEqual(
      new Set(['name', 'categoryId', 'status', 'id']),
    );
    expect(checkListPets(200, '[{"id":1,"name":"Rex","categoryId":"two"}]')).toMatchObject({ pointer: '/0/categoryId', keyword: 'type' });
  });

  it('leaves a body nested past MAX_ANSWER_DEPTH unchecked, without reading it', () => {
    const deep = `${'['.repeat(MAX_ANSWER_DEPTH + 1)}${']'.repeat(MAX_ANSWER_DEPTH + 1)}`;
    expect(checkListPets(200, deep)).toBe('too_deep');
    expect(checkListPets(200, `${'['.repeat(MAX_ANSWER_DEPTH)}${']'.repeat(MAX_ANSWER_DEPTH)}`)).toMatchObject({ kind: 'body_schema' });
  });

  it('leaves a body of more than MAX_ANSWER_VALUES values and member names unchecked; one at the bound is checked', () => {
    // A list of n pets of four members each is 9n + 1 values and member names.
    const pets = (count: number) => JSON.stringify(Array.from({ length: count }, (_, at) => ({ id: at + 1, name: 'Rex', categoryId: 2, status: 'available' })));
    const withinBound = Math.floor((MAX_ANSWER_VALUES - 1) / 9);
    expect(checkListPets(200, pets(withinBound))).toBeUndefined();
    expect(checkListPets(200, pets(withinBound + 1))).toBe('too_many_values');
    expect(checkListPets(200, `[${Array(MAX_ANSWER_VALUES).fill('0.0').join(',')}]`)).toBe('too_many_values');
  });
});
