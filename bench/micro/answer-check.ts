// node bench/micro/answer-check.ts: thread CPU of one answer check (src/proxy/answer-check.ts checkBody) for the bodies of
// issue 53, each about 262 KB (under the 256 KiB bound), and the costliest shapes within the value bound: flat 65,504 × `0.0`, flat 2,000 pets, 63 and 31 nested arrays around the
// same numbers. Wall time per check (median and slowest of ROUNDS) and thread CPU (process.threadCpuUsage, whose ticks are too coarse for one
// check) as the mean over the rounds.
// Decision record 0025.
import { fileURLToPath } from 'node:url';
import { checkAnswerHead } from '../../src/contract/check-answer.ts';
import { loadContract } from '../../src/contract/compile-contract.ts';
import { checkBody } from '../../src/proxy/answer-check.ts';

const ROUNDS = Math.max(5, Number(process.env.MICRO_ROUNDS ?? 40));
const listPets = loadContract(fileURLToPath(new URL('../../config/petstore.openapi.yaml', import.meta.url))).byId.get('listPets')!;
const head = checkAnswerHead(listPets.responses, 200, () => true, 'application/json', true);
if (head.violation !== undefined || head.body === undefined) throw new Error('a listPets 200 head in application/json has a body to check');
const rule = head.body;
const check = { enforce: true, operation: listPets, headOnly: false, maxBodyBytes: 262_144, defaultCoversErrorsOnly: true };

const zeros = Array(65_504).fill('0.0').join(',');
/** 2,000 pets, names padded so the list is about 262 KB. */
const pets = JSON.stringify(
  Array.from({ length: 2_000 }, (_, at) => ({ id: at + 1, name: `pet-${String(at).padStart(4, '0')}-${'x'.repeat(64)}`, categoryId: 7, status: 'available' })),
);
const bodies: Record<string, Buffer> = {
  'flat 65,504 × 0.0': Buffer.from(`[${zeros}]`),
  'flat 2,000 pets': Buffer.from(pets),
  '63 nested arrays around 65,504 × 0.0': Buffer.from(`${'['.repeat(63)}${zeros}${']'.repeat(63)}`),
  '31 nested arrays around 65,504 × 0.0': Buffer.from(`${'['.repeat(31)}${zeros}${']'.repeat(31)}`),
  // The costliest shapes found within the value bound (MAX_ANSWER_VALUES, 4,096): every value read and checked.
  'flat 4,095 × 0.0 (at the value bound)': Buffer.from(`[${Array(4_095).fill('0.0').join(',')}]`),
  '455 pets (4,096 values and names, at the bound)': Buffer.from(
    JSON.stringify(Array.from({ length: 455 }, (_, at) => ({ id: at + 1, name: `pet-${at}-${'x'.repeat(28)}`, categoryId: 7, status: 'available' }))),
  ),
  'one object of 2,047 members (at the bound)': Buffer.from(JSON.stringify(Object.fromEntries(Array.from({ length: 2_047 }, (_, at) => [`member-${at}`, at])))),
};

for (const [name, body] of Object.entries(bodies)) {
  const times: number[] = [];
  let verdict: unknown;
  const cpuBefore = process.threadCpuUsage();
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    verdict = checkBody(check, rule, 200, undefined, body);
    times.push(performance.now() - started);
  }
  const cpu = process.threadCpuUsage(cpuBefore);
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  const cpuMean = (cpu.user + cpu.system) / 1000 / ROUNDS;
  console.log(
    `${name} (${body.length} bytes): wall median ${median.toFixed(2)} ms, slowest ${times.at(-1)!.toFixed(2)} ms; thread CPU mean ${cpuMean.toFixed(2)} ms; ${JSON.stringify(verdict)}`,
  );
}
