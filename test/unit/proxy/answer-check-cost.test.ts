// One answer's check costs bounded CPU: hostile bodies within the size bound, nested or flat, measured in thread CPU time.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkAnswerHead } from '../../../src/contract/check-answer.ts';
import { loadContract } from '../../../src/contract/compile-contract.ts';
import { checkBody } from '../../../src/proxy/answer-check.ts';

const listPets = loadContract(fileURLToPath(new URL('../../../config/petstore.openapi.yaml', import.meta.url))).byId.get('listPets')!;
const head = checkAnswerHead(listPets.responses, 200, () => true, 'application/json', true);
if (head.violation !== undefined || head.body === undefined) throw new Error('a listPets 200 head in application/json has a body to check');
const rule = head.body;
const check = { enforce: true, operation: listPets, headOnly: false, maxBodyBytes: 262_144, defaultCoversErrorsOnly: true };

/**
 * This thread's CPU milliseconds for one check of `body`: the mean of `runs` (thread CPU: a busy machine does not inflate it; its
 * clock ticks every few ms, too coarse to time one check alone).
 */
function meanCheckMs(body: Buffer, runs = 20): number {
  const before = process.threadCpuUsage();
  for (let run = 0; run < runs; run++) checkBody(check, rule, 200, undefined, body);
  const spent = process.threadCpuUsage(before);
  return (spent.user + spent.system) / 1000 / runs;
}

describe('the CPU one answer check costs', () => {
  it('the hostile 262 KB body (63 nested arrays around 65,504 × 0.0): a few ms, unchecked as too_deep', () => {
    const hostile = Buffer.from(`${'['.repeat(63)}${Array(65_504).fill('0.0').join(',')}${']'.repeat(63)}`);
    expect(hostile.length).toBe(262_141);
    expect(checkBody(check, rule, 200, undefined, hostile)).toEqual({ result: 'unchecked', reason: 'too_deep' });
    const ms = meanCheckMs(hostile);
    expect(ms).toBeLessThan(10);
  });

  it('the same numbers flat, within the size and depth bounds: a few ms, unchecked as too_many_values', () => {
    const flat = Buffer.from(`[${Array(65_504).fill('0.0').join(',')}]`);
    expect(flat.length).toBe(262_017);
    expect(checkBody(check, rule, 200, undefined, flat)).toEqual({ result: 'unchecked', reason: 'too_many_values' });
    expect(meanCheckMs(flat)).toBeLessThan(10);
  });

  it('a list of 2,000 pets (262 KB, 18,001 values and member names): a few ms, unchecked as too_many_values', () => {
    const pets = Buffer.from(
      JSON.stringify(Array.from({ length: 2_000 }, (_, at) => ({ id: at + 1, name: `pet-${at}-${'x'.repeat(64)}`, categoryId: 7, status: 'available' }))),
    );
    expect(pets.length).toBeLessThan(262_144);
    expect(checkBody(check, rule, 200, undefined, pets)).toEqual({ result: 'unchecked', reason: 'too_many_values' });
    expect(meanCheckMs(pets)).toBeLessThan(10);
  });

  it('the costliest shape within the bound, one object of 2,047 members: checked in a few ms', () => {
    const members = Buffer.from(JSON.stringify(Object.fromEntries(Array.from({ length: 2_047 }, (_, at) => [`member-${at}`, at]))));
    expect(checkBody(check, rule, 200, undefined, members)).toMatchObject({ result: 'violation', violation: { kind: 'body_schema' } });
    expect(meanCheckMs(members)).toBeLessThan(20);
  });
});
