// node bench/micro/strict-json.ts: a createPet body checked and forwarded as received (the gateway:
// src/contract/strict-json.ts, then the schema), against JSON.parse and a re-serialised body, and against
// JSON.parse with the bytes forwarded; then what each would send upstream for bodies where they differ.
// Decision record 0005. Run it pinned: taskset -c 0 node bench/micro/strict-json.ts
import { fileURLToPath } from 'node:url';
import { loadContract } from '../../src/contract/compile-contract.ts';
import { findNonCanonicalInteger } from '../../src/contract/integer-spelling.ts';
import { parseJsonBody } from '../../src/contract/strict-json.ts';

const ROUNDS = Math.max(3, Number(process.env.MICRO_ROUNDS ?? 7));
const OPS = 100_000;

const contract = loadContract(fileURLToPath(new URL('../../config/petstore.openapi.yaml', import.meta.url)));
const validate = contract.byId.get('createPet')!.requestBody!.validate;

/** What the upstream is sent, or undefined when the body is refused (400). */
type Forward = (bytes: Buffer) => Buffer | undefined;
const checks: Array<{ name: string; parseOnly: Forward; withSchema: Forward }> = [
  {
    name: 'strict check, bytes forwarded (gateway)',
    parseOnly: (bytes) => (parseJsonBody(bytes).ok ? bytes : undefined),
    withSchema(bytes) {
      const parsed = parseJsonBody(bytes);
      if (!parsed.ok || !validate(parsed.value)) return undefined;
      return findNonCanonicalInteger(validate, parsed.value, parsed.nonCanonicalIntegers) ? undefined : bytes;
    },
  },
  {
    name: 'JSON.parse, re-serialised',
    parseOnly: (bytes) => Buffer.from(JSON.stringify(JSON.parse(bytes.toString('utf8'))), 'utf8'),
    withSchema(bytes) {
      const value: unknown = JSON.parse(bytes.toString('utf8'));
      return validate(value) ? Buffer.from(JSON.stringify(value), 'utf8') : undefined;
    },
  },
  {
    name: 'JSON.parse, bytes forwarded',
    parseOnly: (bytes) => (JSON.parse(bytes.toString('utf8')) === undefined ? undefined : bytes),
    withSchema: (bytes) => (validate(JSON.parse(bytes.toString('utf8'))) ? bytes : undefined),
  },
];

const bodies = {
  typical: Buffer.from('{"name":"Biscuit","categoryId":1,"status":"available"}'),
  larger: Buffer.from(
    '{"name":"Biscuit the Second","categoryId":12,"status":"available","tags":["small","friendly","house-trained"],' +
      '"owner":{"name":"Ann Example","phone":"+44 20 7946 0958","address":{"city":"Leeds","postcode":"LS1 4AP"}},"weightKg":7.25}',
  ),
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
let sink = 0;
function nsPerOp(forward: Forward, body: Buffer): number {
  const before = process.cpuUsage();
  for (let i = 0; i < OPS; i++) sink += forward(body)?.length ?? 0;
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / OPS;
}

const columns = Object.entries(bodies).flatMap(([body, bytes]) =>
  (['parseOnly', 'withSchema'] as const).map((kind) => ({
    label: `${body} (${bytes.length} B)${kind === 'withSchema' ? ' + schema' : ''}`,
    body: bytes,
    kind,
  })),
);
const samples = checks.map(() => columns.map((): number[] => []));
for (const check of checks) for (const column of columns) nsPerOp(check[column.kind], column.body); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (const [c, column] of columns.entries()) for (const [k, check] of checks.entries()) samples[k]![c]!.push(nsPerOp(check[column.kind], column.body));
  process.stderr.write(`round ${round + 1}/${ROUNDS}\n`);
}
const width = Math.max(...checks.map((check) => check.name.length));
process.stdout.write(`CPU ns per body (${OPS} per run, ${ROUNDS} rounds in turn, medians; node ${process.version}); ×: to the gateway's\n`);
for (const [c, column] of columns.entries()) {
  process.stdout.write(`\n${column.label}\n`);
  const gateway = median(samples[0]![c]!);
  for (const [k, check] of checks.entries()) {
    const ns = median(samples[k]![c]!);
    process.stdout.write(`  ${check.name.padEnd(width)} ${ns.toFixed(0).padStart(6)} ns  ×${(ns / gateway).toFixed(2)}\n`);
  }
}

// What the backend would be sent: bodies createPet accepts (or that JSON.parse does), where re-serialising changes them.
const cases = [
  '{"name":"a","categoryId":9223372036854775807}',
  '{"name":"a","categoryId":1,"weight":1e400}',
  '{"name":"a","categoryId":1,"price":19.999999999999999999}',
  '{"name":"a","categoryId":1,"weight":-0,"tags":[1e2,1.0]}',
  '{"name":"Zo\\u00eb","categoryId":1}',
  '{"name":"a","categoryId":1,"10":"x"}',
  '{"name":"a","categoryId":1,"name":"b"}',
  '{"name":"a","categoryId":1e0}',
];
const shown = (sent: Buffer | undefined) => (sent === undefined ? '400' : sent.toString('utf8'));
process.stdout.write('\nSent upstream (400: refused by the gateway)\n| body | gateway | re-serialised |\n|---|---|---|\n');
for (const text of cases) {
  const bytes = Buffer.from(text);
  process.stdout.write(
    `| \`${text}\` | ${shown(checks[0]!.withSchema(bytes)) === text ? 'as received' : shown(checks[0]!.withSchema(bytes))} | \`${shown(checks[1]!.withSchema(bytes))}\` |\n`,
  );
}
if (sink === 0) process.stdout.write('\n');
