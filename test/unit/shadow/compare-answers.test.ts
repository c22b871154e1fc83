// Two answers to one request compared: status first, then the headers the document declares, then the body, decoded.
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseAnswerBody } from '../../../src/contract/check-answer.ts';
import { loadContract } from '../../../src/contract/compile-contract.ts';
import { compareAnswers, type ReadAnswer } from '../../../src/shadow/compare-answers.ts';

const contract = loadContract(fileURLToPath(new URL('../../../config/petstore.openapi.yaml', import.meta.url)));
const listPets = contract.byId.get('listPets')!;
const getPet = contract.byId.get('getPet')!;
const BOUNDS = { maxBodyBytes: 1024, maxNodes: 10_000 };
const answer = (status: number, body: string, headers: ReadAnswer['headers'] = { 'content-type': 'application/json' }): ReadAnswer => ({
  status,
  headers,
  body: Buffer.from(body),
});

describe('compareAnswers', () => {
  it('names another status once, and compares nothing else', () => {
    expect(compareAnswers(listPets, answer(200, '[]'), answer(500, '{"x":1}'), BOUNDS)).toEqual({
      differences: [{ pointer: '/status', kind: 'status' }],
      partial: false,
    });
  });

  it('compares the headers the document declares for the status, and no other', () => {
    const declared = [...(listPets.responseHeaders.get('200') ?? [])];
    expect(declared.length).toBeGreaterThan(0);
    const name = declared[0]!;
    const production = answer(200, '[]', { 'content-type': 'application/json', [name]: 'a', 'x-backend-only': '1' });
    const staging = answer(200, '[]', { 'content-type': 'application/json', [name]: 'b', 'x-backend-only': '2' });
    expect(compareAnswers(listPets, production, staging, BOUNDS).differences).toEqual([{ pointer: `/headers/${name}`, kind: 'header' }]);
  });

  it('decodes a Content-Encoding before comparing the JSON', () => {
    const staging: ReadAnswer = { status: 200, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync('[{"id":2}]') };
    expect(compareAnswers(listPets, answer(200, '[{"id":1}]'), staging, BOUNDS).differences).toEqual([{ pointer: '/*/id', kind: 'value' }]);
  });

  it("names a body's members by the operation's declared response only: an undeclared map keyed by e-mail addresses is *", () => {
    const pet = (owners: Record<string, unknown>) => JSON.stringify({ id: 1, name: 'Rex', categoryId: 2, status: 'sold', owners });
    const production = answer(200, pet({ 'ann@example.com': 'since 2020', 'bob@example.com': 'since 2021' }));
    const staging = answer(200, pet({ 'ann@example.com': 'since 2022', 'cy@example.com': 'since 2021' }));
    expect(compareAnswers(getPet, production, staging, BOUNDS).differences).toEqual([
      { pointer: '/*/*', kind: 'value' },
      { pointer: '/*/*', kind: 'missing' },
      { pointer: '/*/*', kind: 'extra' },
    ]);
  });

  it('names no member at all in a media type the response does not declare', () => {
    const other = { 'content-type': 'application/vnd.other+json' };
    const production = answer(200, '{"status":1,"ann@example.com":1}', other);
    const staging = answer(200, '{"status":2,"ann@example.com":2}', other);
    expect(compareAnswers(getPet, production, staging, BOUNDS).differences).toEqual([{ pointer: '/*', kind: 'value' }]);
  });

  it("reads staging's body as its contract check parsed it, not parsing it again", () => {
    const staging = { ...answer(200, '[{"id":1}]'), parsed: parseAnswerBody(Buffer.from('[{"id":2}]')) };
    expect(compareAnswers(listPets, answer(200, '[{"id":1}]'), staging, BOUNDS).differences).toEqual([{ pointer: '/*/id', kind: 'value' }]);
  });

  it('says the comparison was partial for a body over the bound, and lists nothing from it', () => {
    const big = `[${'1,'.repeat(600)}1]`;
    expect(compareAnswers(listPets, answer(200, big), answer(200, `${big} `), BOUNDS)).toEqual({ differences: [], partial: true });
  });

  it('compares bodies that are not JSON byte for byte', () => {
    const text = { 'content-type': 'text/plain' };
    expect(compareAnswers(listPets, answer(200, 'a', text), answer(200, 'b', text), BOUNDS).differences).toEqual([{ pointer: '', kind: 'value' }]);
    expect(compareAnswers(listPets, answer(200, 'a', text), answer(200, 'a', text), BOUNDS).differences).toEqual([]);
  });
});
