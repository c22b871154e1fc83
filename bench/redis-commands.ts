// Redis commands a request costs, with a key without quotas and one with a daily and a monthly quota, from one
// gateway process: the two keys' load alternated in rounds, each round's commands (INFO commandstats) divided by
// its requests, as the gateway sent them (a script once) and as Redis ran them (the scripts' own calls too).
// The budget of issue 44: the commands sent within 10% of a key without quotas.
//   node bench/redis-commands.ts   REDIS_COMMANDS_ROUNDS (default 4) rounds of REDIS_COMMANDS_DURATION_S (default 10) each
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseVariants, ROOT, startBench, wrk } from './gateway-variants.ts';
import { runOrigin } from './results-file.ts';

const ROUNDS = Number(process.env.REDIS_COMMANDS_ROUNDS ?? 4);
const DURATION_S = Number(process.env.REDIS_COMMANDS_DURATION_S ?? 10);
const CONNECTIONS = 8;

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const bench = await startBench();
try {
  const [plain, quota] = parseVariants(['off', 'off,BENCH_KEY=quota']) as [ReturnType<typeof parseVariants>[number], ReturnType<typeof parseVariants>[number]];
  const running = await bench.launch(plain, { name: 'gateway', cpu: '0', warmS: 10, connections: CONNECTIONS });
  const perRequest = { plain: { sent: [] as number[], run: [] as number[] }, quota: { sent: [] as number[], run: [] as number[] } };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, variant] of [
      ['plain', plain],
      ['quota', quota],
    ] as const) {
      const before = await bench.redisCommands();
      const requests = await wrk(running.url, bench.keyFor(variant), DURATION_S, CONNECTIONS);
      const after = await bench.redisCommands();
      const [sent, run] = [(after.sent - before.sent) / requests, (after.run - before.run) / requests];
      perRequest[name].sent.push(sent);
      perRequest[name].run.push(run);
      process.stdout.write(`round ${round}, ${name}: ${requests} requests; a request: ${sent.toFixed(3)} commands sent, ${run.toFixed(3)} run\n`);
    }
  }
  const origin = runOrigin(ROOT, new Date());
  const summary = {
    origin,
    settings: { connections: CONNECTIONS, rounds: ROUNDS, durationS: DURATION_S },
    sentPerRequest: { plain: median(perRequest.plain.sent), quota: median(perRequest.quota.sent) },
    runPerRequest: { plain: median(perRequest.plain.run), quota: median(perRequest.quota.run) },
    sentRatio: median(perRequest.quota.sent) / median(perRequest.plain.sent),
    everyRound: perRequest,
  };
  const file = join(ROOT, 'bench', 'results', `${origin.date.slice(0, 10)}-redis-commands.json`);
  writeFileSync(file, `${JSON.stringify(summary, null, 2)}\n`);
  process.stdout.write(
    `medians a request: sent ${summary.sentPerRequest.plain.toFixed(3)} without quotas, ${summary.sentPerRequest.quota.toFixed(3)} with (×${summary.sentRatio.toFixed(3)}); run ${summary.runPerRequest.plain.toFixed(3)} and ${summary.runPerRequest.quota.toFixed(3)}; ${file}\n`,
  );
  await bench.stop([running.child]);
} finally {
  bench.close();
}
