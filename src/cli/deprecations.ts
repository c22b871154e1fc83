// npm run deprecations -- <command>: operators brown out deprecated operations and see who still calls them.
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { ConfigError, loadConfig } from '../config/load-config.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { allOperations, loadApiVersions } from '../contract/api-versions.ts';
import { toReportRows, type DeprecatedCallRow } from '../observability/deprecated-calls.ts';
import { RedisDeprecatedCallStore } from '../observability/redis-deprecated-call-store.ts';
import { publishBrownoutOverride, readBrownoutOverrides } from '../policy/brownout-events.ts';
import { BrownoutBoard, compileBrownoutSchedule, type BrownoutSchedule, type ListedBrownout } from '../policy/brownouts.ts';
import type { RedisClient } from '../redis/connect.ts';
import { systemClock } from '../time/clock.ts';
import { RedisUnreachableError, withToolRedis } from './tool-redis.ts';

/** A runtime failure with a message for the operator (exit 1). */
class DeprecationsError extends Error {
  override name = 'DeprecationsError';
}

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed) || parsed < 1) throw new InvalidArgumentError('must be a positive integer');
  return parsed;
}

const iso = (ms: number) => new Date(ms).toISOString();

interface Setting {
  config: GatewayConfig;
  schedule: BrownoutSchedule;
  /** `GET /v1/pets/{petId}` by deprecated operationId. */
  described: Map<string, string>;
}

/** The configuration and the document's deprecated operations, read before Redis is asked. */
function loadSetting(): Setting {
  const config = loadConfig();
  try {
    const versions = loadApiVersions(config.sources);
    const described = new Map(
      versions.flatMap(({ contract }) =>
        contract.operations
          .filter((operation) => operation.deprecation)
          .map((operation) => [operation.id, `${operation.method} ${contract.basePath}${operation.pathTemplate}`] as const),
      ),
    );
    return { config, schedule: compileBrownoutSchedule(allOperations(versions), config.deprecations), described };
  } catch (cause) {
    throw new DeprecationsError((cause as Error).message, { cause });
  }
}

/** A usage error (exit 2, with the usage), raised the way commander raises its own. */
function requireDeprecated(command: Command, setting: Setting, operation: string): void {
  if (setting.described.has(operation)) return;
  const deprecated = [...setting.described.keys()].join(', ') || 'none';
  command.error(
    `error: '${operation}' is not a deprecated operation of the interface document; only deprecated operations can be browned out (deprecated: ${deprecated})`,
  );
}

async function loadBoard(redis: RedisClient, setting: Setting): Promise<BrownoutBoard> {
  const board = new BrownoutBoard(setting.schedule);
  for (const [operation, override] of await readBrownoutOverrides(redis, setting.config.redis.keyPrefix, board.operations))
    board.setOverride(operation, override);
  return board;
}

function printBrownouts(listed: readonly ListedBrownout[], json: boolean): void {
  const rows = listed.map((entry) => ({ operation: entry.operation, state: entry.state, source: entry.source, start: iso(entry.start), end: iso(entry.end) }));
  if (json) {
    process.stdout.write(`${JSON.stringify(rows)}\n`);
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('no active or scheduled brownouts\n');
    return;
  }
  for (const row of rows)
    process.stdout.write(
      `${row.operation}  ${row.state.padEnd(9)}  ${row.start} to ${row.end}  (${row.source === 'operator' ? 'started by an operator' : 'scheduled in config'})\n`,
    );
}

function printReport(rows: readonly DeprecatedCallRow[], setting: Setting, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(rows)}\n`);
    return;
  }
  const lines: string[] = [];
  for (const [operation, described] of setting.described) {
    const own = rows.filter((row) => row.operation === operation);
    lines.push(`${operation} (${described}): ${own.length} consumer${own.length === 1 ? '' : 's'}`);
    const table = [
      ['KEY ID', 'CONSUMER', 'CALLS', 'FIRST SEEN', 'LAST SEEN'],
      ...own.map((row) => [row.keyId, row.consumer, String(row.calls), row.firstSeen, row.lastSeen]),
    ];
    const widths = table[0]!.map((_, column) => Math.max(...table.map((cells) => cells[column]!.length)));
    if (own.length > 0)
      for (const cells of table)
        lines.push(
          `  ${cells
            .map((cell, column) => cell.padEnd(widths[column]!))
            .join('  ')
            .trimEnd()}`,
        );
  }
  process.stdout.write(`${lines.join('\n') || 'the interface document deprecates no operation'}\n`);
}

/** The exit codes docs/operations.md gives: 2 for a usage error, 1 for a runtime error (Redis, configuration, nothing to stop). */
const USAGE_ERROR = 2;

const program = new Command('deprecations')
  .description('Brown out deprecated operations and report who still calls them (Redis: REDIS_URL).')
  .showHelpAfterError()
  // Commander throws instead of exiting, so the exit code is decided below; set before the subcommands, which inherit both.
  .exitOverride()
  .configureOutput({ outputError: (message, write) => write(`deprecations: ${message}`) });

const brownout = program.command('brownout').description('refuse a deprecated operation (410 brownout) for a while, on every replica');

brownout
  .command('start <operationId>')
  .description('start a brownout now; every replica refuses the operation within a second, until it ends')
  .requiredOption('--minutes <n>', 'how long it lasts', positiveInteger)
  .action(async function start(this: Command, operation: string, options: { minutes: number }) {
    const setting = loadSetting();
    requireDeprecated(this, setting, operation);
    const now = systemClock.now();
    const window = { start: now, end: now + options.minutes * 60_000 };
    await withToolRedis(setting.config.redis, 'petstore-gateway-deprecations', (redis) =>
      publishBrownoutOverride(redis, setting.config.redis.keyPrefix, operation, { kind: 'started', ...window }, now),
    );
    process.stdout.write(`brownout of ${operation} started: refused with 410 brownout until ${iso(window.end)}\n`);
  });

brownout
  .command('stop <operationId>')
  .description("end the brownout in progress (an operator's, or a scheduled window's) on every replica")
  .action(async function stop(this: Command, operation: string) {
    const setting = loadSetting();
    requireDeprecated(this, setting, operation);
    const message = await withToolRedis(setting.config.redis, 'petstore-gateway-deprecations', async (redis) => {
      const now = systemClock.now();
      const board = await loadBoard(redis, setting);
      if (!board.active(operation, now)) throw new DeprecationsError(`no brownout of ${operation} is in progress`);
      // A scheduled window would resume once the operator's override is gone: it is cancelled until its end.
      const scheduledEnd = Math.max(
        ...(setting.schedule.get(operation) ?? []).filter((window) => window.start <= now && now < window.end).map((window) => window.end),
      );
      const override = Number.isFinite(scheduledEnd) ? ({ kind: 'stopped', until: scheduledEnd } as const) : undefined;
      await publishBrownoutOverride(redis, setting.config.redis.keyPrefix, operation, override, now);
      return `brownout of ${operation} stopped${override ? `; the scheduled window stays cancelled until ${iso(override.until)}` : ''}`;
    });
    process.stdout.write(`${message}\n`);
  });

brownout
  .command('list')
  .description('list active and scheduled brownouts')
  .option('--json', 'one JSON line: [{"operation", "state", "source", "start", "end"}]')
  .action(async (options: { json?: boolean }) => {
    const setting = loadSetting();
    const board = await withToolRedis(setting.config.redis, 'petstore-gateway-deprecations', (redis) => loadBoard(redis, setting));
    printBrownouts(board.list(systemClock.now()), options.json === true);
  });

program
  .command('report')
  .description('per deprecated operation, every consumer that called it, across replicas (counts reach Redis within deprecationReport.flushIntervalMs)')
  .option('--json', 'one JSON line: [{"operation", "keyId", "consumer", "calls", "firstSeen", "lastSeen"}]')
  .action(async (options: { json?: boolean }) => {
    const setting = loadSetting();
    const counts = await withToolRedis(setting.config.redis, 'petstore-gateway-deprecations', (redis) =>
      new RedisDeprecatedCallStore(redis, setting.config.redis.keyPrefix).read([...setting.described.keys()]),
    );
    printReport(toReportRows(counts), setting, options.json === true);
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Already reported on stderr by commander; --help and --version are the only non-errors it throws.
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : USAGE_ERROR);
  const known = error instanceof DeprecationsError || error instanceof ConfigError || error instanceof RedisUnreachableError;
  process.stderr.write(`deprecations: ${known ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
}
