// Redis commands a request costs, with a key without quotas and one with a daily and a monthly quota, from one
// gateway process: the two keys' load alternated in rounds, each round's commands (INFO commandstats, what
// the scripts call included) divided by its requests. The budget of issue 44: within 10% of a key without.
//   node bench/redis-commands.ts   REDIS_COMMANDS_ROUNDS (default 4) rounds of REDIS_COMMANDS_DURATION_S (default 10) each
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseVariants, ROOT, startBench, wrk } from './gateway-variants.ts';
import { runOrigin } from './results-file.ts';

const ROUNDS = Number(process.env.REDIS_COMMANDS_ROUNDS ?? 4);
const DURATION_S = Number(process.env.REDIS_COMMANDS_DURATION_S ?? 10);
const CONNECTIONS = 8;

const bench = await startBench();
try {
  const [plain, quota] = parseVariants(['off', 'off,BENCH_KEY=quota']) as [ReturnType<typeof parseVariants>[number], ReturnType<typeof parseVariants>[number]];
  const running = await bench.launch(plain, { name: 'gateway', cpu: '0', warmS: 10, connections: CONNECTIONS });
  const perRequest = { plain: [] as number[], quota: [] as number[] };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, variant] of [
      ['plain', plain],
      ['quota', quota],
    ] as const) {
      const before = await bench.redisCommands();
      const requests = await wrk(running.url, bench.keyFor(variant), DURATION_S, CONNECTIONS);
      const commands = (await bench.redisCommands()) - before;
      perRequest[name].push(commands / requests);
      process.stdout.write(`round ${round}, ${name}: ${requests} requests, ${commands} commands, ${(commands / requests).toFixed(3)} a request\n`);
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const origin = runOrigin(ROOT, new Date());
  const summary = {
    origin,
    settings: { connections: CONNECTIONS, rounds: ROUNDS, durationS: DURATION_S },
    commandsPerRequest: { plain: median(perRequest.plain), quota: median(perRequest.quota) },
    ratio: median(perRequest.quota) / median(perRequest.plain),
    everyRound: perRequest,
  };
  const file = join(ROOT, 'bench', 'results', `${origin.date.slice(0, 10)}-redis-commands.json`);
  writeFileSync(file, `${JSON.stringify(summary, null, 2)}\n`);
  process.stdout.write(
    `median commands a request: plain ${summary.commandsPerRequest.plain.toFixed(3)}, quota ${summary.commandsPerRequest.quota.toFixed(3)} (×${summary.ratio.toFixed(3)}); ${file}\n`,
  );
  await bench.stop([running.child]);
} finally {
  bench.close();
}
