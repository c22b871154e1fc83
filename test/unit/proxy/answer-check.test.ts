// Which answers are checked and how: the report mode's sample, and bodies decoded from their Content-Encoding within the bound.
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { checkAnswerHead } from '../../../src/contract/check-answer.ts';
import { loadContract } from '../../../src/contract/compile-contract.ts';
import { checkBody, createAnswerChecks } from '../../../src/proxy/answer-check.ts';

const listPets = loadContract(fileURLToPath(new URL('../../../config/petstore.openapi.yaml', import.meta.url))).byId.get('listPets')!;
const head = checkAnswerHead(listPets.responses, 200, () => true, 'application/json', true);
if (head.violation !== undefined || head.body === undefined) throw new Error('a listPets 200 head in application/json has a body to check');
const rule = head.body;
const PETS = Buffer.from('[{"id":1,"name":"Rex","categoryId":2}]');
const OFF_SHAPE = Buffer.from('[{"id":"1","name":"Rex","categoryId":2}]');

describe('createAnswerChecks', () => {
  it('checks nothing when off', () => {
    expect(createAnswerChecks({ mode: 'off', sample: 1, maxBodyBytes: 1024 })(listPets, 'GET')).toBeUndefined();
  });

  it('checks the share report samples, by the draw it is given', () => {
    const draws = [0.01, 0.2, 0.09, 0.5];
    const checkFor = createAnswerChecks({ mode: 'report', sample: 0.1, maxBodyBytes: 1024 }, () => draws.shift()!);
    const checked = [0, 1, 2, 3].map(() => checkFor(listPets, 'GET') !== undefined);
    expect(checked).toEqual([true, false, true, false]);
  });

  it('checks every answer under enforce, whatever the sample', () => {
    const checkFor = createAnswerChecks({ mode: 'enforce', sample: 0, maxBodyBytes: 1024 }, () => 0.99);
    expect(checkFor(listPets, 'GET')).toEqual({ enforce: true, operation: listPets, headOnly: false, maxBodyBytes: 1024, defaultCoversErrorsOnly: true });
  });

  it('reads `default` as covering errors only under enforce, all statuses under report, unless told', () => {
    const covers = (mode: 'report' | 'enforce', defaultCovers?: 'all' | 'errors') =>
      createAnswerChecks({ mode, sample: 1, maxBodyBytes: 1024, defaultCovers })(listPets, 'GET')?.defaultCoversErrorsOnly;
    expect([covers('enforce'), covers('report'), covers('enforce', 'all'), covers('report', 'errors')]).toEqual([true, false, false, true]);
  });

  it("checks a HEAD answer's head only", () => {
    expect(createAnswerChecks({ mode: 'enforce', sample: 1, maxBodyBytes: 1024 })(listPets, 'HEAD')?.headOnly).toBe(true);
  });
});

describe('checkBody', () => {
  const check = { enforce: true, operation: listPets, headOnly: false, maxBodyBytes: 1024, defaultCoversErrorsOnly: true };

  it.each([
    ['gzip', gzipSync],
    ['x-gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ])('decodes %s before checking', (coding, encode) => {
    expect(checkBody(check, rule, 200, coding, encode(PETS))).toEqual({ result: 'valid' });
    expect(checkBody(check, rule, 200, coding, encode(OFF_SHAPE))).toMatchObject({ result: 'violation', violation: { pointer: '/0/id' } });
  });

  it('leaves a body that inflates past the bound unchecked', () => {
    const bomb = gzipSync(Buffer.alloc(4096, 0x20));
    expect(checkBody(check, rule, 200, 'gzip', bomb)).toEqual({ result: 'unchecked', reason: 'too_large' });
  });

  it('calls a body that does not decode in its coding unparseable', () => {
    expect(checkBody(check, rule, 200, 'gzip', PETS)).toMatchObject({
      result: 'violation',
      violation: { kind: 'unparseable_body', keyword: 'content-encoding' },
      enforced: true,
    });
  });

  it('leaves a coding it does not decode unchecked', () => {
    expect(checkBody(check, rule, 200, 'gzip, x-pet-store', gzipSync(PETS))).toEqual({ result: 'unchecked', reason: 'encoding' });
  });

  it.each([
    ['gzip, gzip', 'gzip, gzip', gzipSync(gzipSync(OFF_SHAPE))],
    ['two lines', ['gzip', 'gzip'], gzipSync(gzipSync(OFF_SHAPE))],
    ['deflate then br', 'deflate, br', brotliCompressSync(deflateSync(OFF_SHAPE))],
    ['identity, identity', 'identity, identity', OFF_SHAPE],
    ['identity between', 'gzip, identity', gzipSync(OFF_SHAPE)],
  ])('decodes stacked or repeated codings in order (%s): the body under them is checked', (_name, coding, bytes) => {
    expect(checkBody(check, rule, 200, coding, bytes)).toMatchObject({ result: 'violation', violation: { kind: 'body_schema', pointer: '/0/id' } });
  });

  it('leaves more than two codings stacked unchecked', () => {
    expect(checkBody(check, rule, 200, 'gzip, gzip, gzip', gzipSync(gzipSync(gzipSync(PETS))))).toEqual({ result: 'unchecked', reason: 'encoding' });
  });

  it('stops at the bound at every step: a small body that inflates past it twice over is unchecked, too_large', () => {
    const bomb = gzipSync(gzipSync(Buffer.alloc(64 * 1024, 0x20)));
    expect(checkBody({ ...check, maxBodyBytes: 1024 }, rule, 200, 'gzip, gzip', bomb)).toEqual({ result: 'unchecked', reason: 'too_large' });
  });

  it('reads `identity` as no coding', () => {
    expect(checkBody(check, rule, 200, 'identity', PETS)).toEqual({ result: 'valid' });
  });
});
