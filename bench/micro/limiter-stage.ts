// node bench/micro/limiter-stage.ts [<the build before's src/limits/rate-limit.ts>]: the rate-limit stage alone, in
// process (the in-process store, no Redis), CPU time a request for keys without and with quotas; with a path, the
// same stage of another tree too (its own store), in alternated rounds. Decision record 0026 (the gateway's own
// limiter against express-rate-limit with the quota channel). A rough figure: the whole gateway is counted by
// bench/instructions.ts. Run it pinned: taskset -c 0 node bench/micro/limiter-stage.ts /tmp/before/src/limits/rate-limit.ts
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { createRateLimit, type RateLimitOptions } from '../../src/limits/rate-limit.ts';
import { fixedClock } from '../../src/time/clock.ts';

const ROUNDS = Math.max(3, Number(process.env.MICRO_ROUNDS ?? 7));
const REQUESTS = 100_000;
const clock = fixedClock(Date.parse('2030-01-01T00:00:00Z'));
const options: RateLimitOptions = { windowMs: 60_000, limits: { default: 1e12 }, onStoreError: 'allow', clock };

type Create = (options: RateLimitOptions) => RequestHandler;
const variants: Array<[string, Create]> = [['this build', createRateLimit]];
const before = process.argv[2];
if (before !== undefined) variants.push(['before', ((await import(before)) as { createRateLimit: Create }).createRateLimit]);

/** 100 keys, as the stage finds them on the record after authentication; quotas far away, so every request is let through. */
const keys = (quotas: boolean) =>
  Array.from({ length: 100 }, (_, index) => ({ keyId: `key_${index}`, name: 'acme', ...(quotas ? { quotaPerDay: 1e12, quotaPerMonth: 1e12 } : {}) }));

function request(caller: object): [Request, Response] {
  const record = { caller, route: { operation: { id: 'listPets' }, pathParams: {} } };
  const res = { locals: { gateway: record }, headersSent: false, setHeader: () => res, append: () => res };
  return [{} as Request, res as unknown as Response];
}

/** CPU nanoseconds a request over `count` requests, each awaited (the library's stage answers asynchronously). */
async function round(limiter: RequestHandler, callers: object[], count: number): Promise<number> {
  const start = process.cpuUsage();
  for (let index = 0; index < count; index++) {
    const [req, res] = request(callers[index % callers.length]!);
    await new Promise<void>((resolve) => void limiter(req, res, (() => resolve()) as NextFunction));
  }
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / count;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

for (const quotas of [false, true]) {
  const callers = keys(quotas);
  const limiters = variants.map(([name, create]) => [name, create(options)] as const);
  for (const [, limiter] of limiters) await round(limiter, callers, REQUESTS / 2);
  const rounds = new Map<string, number[]>(limiters.map(([name]) => [name, []]));
  for (let index = 0; index < ROUNDS; index++) for (const [name, limiter] of limiters) rounds.get(name)!.push(await round(limiter, callers, REQUESTS));
  for (const [name, values] of rounds) {
    const figures = values.map((value) => Math.round(value)).join(' ');
    process.stdout.write(
      `${quotas ? 'day+month quotas' : 'no quota        '}  ${name.padEnd(10)} ${Math.round(median(values))} ns CPU a request (rounds ${figures})\n`,
    );
  }
}
