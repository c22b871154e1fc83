// One answer's check costs bounded CPU: the hostile body of 63 nested arrays around 65,504 × `0.0` is measured in thread CPU time.
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

/** This thread's CPU milliseconds for the slowest of `runs` checks of `body` (thread CPU: a busy machine does not inflate it). */
function slowestCheckMs(body: Buffer, runs = 20): number {
  let slowest = 0;
  for (let run = 0; run < runs; run++) {
    const before = process.threadCpuUsage();
    checkBody(check, rule, 200, undefined, body);
    const spent = process.threadCpuUsage(before);
    slowest = Math.max(slowest, (spent.user + spent.system) / 1000);
  }
  return slowest;
}

describe('the CPU one answer check costs', () => {
  it('the hostile 262 KB body (63 nested arrays around 65,504 × 0.0): a few ms, unchecked as too_deep', () => {
    const hostile = Buffer.from(`${'['.repeat(63)}${Array(65_504).fill('0.0').join(',')}${']'.repeat(63)}`);
    expect(hostile.length).toBe(262_141);
    expect(checkBody(check, rule, 200, undefined, hostile)).toEqual({ result: 'unchecked', reason: 'too_deep' });
    const ms = slowestCheckMs(hostile);
    expect(ms).toBeLessThan(10);
  });

  it('the same numbers nested within the bound (31 arrays): checked, parsed without recording their spellings', () => {
    const nested = Buffer.from(`${'['.repeat(31)}${Array(65_504).fill('0.0').join(',')}${']'.repeat(31)}`);
    expect(checkBody(check, rule, 200, undefined, nested)).toMatchObject({ result: 'violation', violation: { kind: 'body_schema' } });
    const ms = slowestCheckMs(nested);
    expect(ms).toBeLessThan(60);
  });
});
