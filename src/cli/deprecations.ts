// npm run deprecations -- <command>: operators brown out deprecated operations and see who still calls them, in Redis or through a gateway's admin API.
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { ConfigError, loadConfig } from '../config/load-config.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { allOperations, loadApiVersions } from '../contract/api-versions.ts';
import { readDeprecationReport, type DeprecatedCallRow } from '../observability/deprecated-calls.ts';
import { RedisDeprecatedCallStore } from '../observability/redis-deprecated-call-store.ts';
import { BrownoutAdmin, BrownoutAdminError, type BrownoutOperations, type BrownoutRow } from '../policy/brownout-admin.ts';
import { compileBrownoutSchedule, type BrownoutSchedule } from '../policy/brownouts.ts';
import { systemClock } from '../time/clock.ts';
import { ADMIN_TOKEN_FILE_HELP, AdminApiError, type AdminClient, type AdminOptions, adminClientFrom, remoteBrownouts, remoteReport } from './admin-client.ts';
import { printable, printableJson } from './printable.ts';
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

/** With --admin-url: the gateway's admin API. */
function adminClient(): AdminClient | undefined {
  return adminClientFrom(program.opts<AdminOptions>());
}

/** The brownout operations: through the admin API with --admin-url, else on Redis. */
async function withBrownouts<T>(setting: Setting, work: (brownouts: BrownoutOperations) => Promise<T>): Promise<T> {
  const client = adminClient();
  if (client) return work(remoteBrownouts(client));
  return withToolRedis(setting.config.redis, 'petstore-gateway-deprecations', (redis) =>
    work(new BrownoutAdmin(redis, { keyPrefix: setting.config.redis.keyPrefix, schedule: () => setting.schedule, clock: systemClock })),
  );
}

function printBrownouts(rows: readonly BrownoutRow[], json: boolean): void {
  if (json) {
    process.stdout.write(`${printableJson(rows)}\n`);
    return;
  }
  if (rows.length === 0) {
    process.stdout.write('no active or scheduled brownouts\n');
    return;
  }
  // Rows read from Redis (or a gateway): escaped, as every value printed on a terminal.
  for (const row of rows)
    process.stdout.write(
      `${printable(row.operation)}  ${printable(row.state).padEnd(9)}  ${printable(row.start)} to ${printable(row.end)}  (${row.source === 'operator' ? 'started by an operator' : 'scheduled in config'})\n`,
    );
}

function printReport(rows: readonly DeprecatedCallRow[], setting: Setting, json: boolean): void {
  if (json) {
    process.stdout.write(`${printableJson(rows)}\n`);
    return;
  }
  const lines: string[] = [];
  for (const [operation, described] of setting.described) {
    const own = rows.filter((row) => row.operation === operation);
    lines.push(`${operation} (${described}): ${own.length} consumer${own.length === 1 ? '' : 's'}`);
    const table = [
      ['KEY ID', 'CONSUMER', 'CALLS', 'FIRST SEEN', 'LAST SEEN'],
      // Consumer names and ids come from Redis: escaped before their widths are measured.
      ...own.map((row) => [printable(row.keyId), printable(row.consumer), String(row.calls), printable(row.firstSeen), printable(row.lastSeen)]),
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
  .description("Brown out deprecated operations and report who still calls them (Redis: REDIS_URL; or a gateway's admin API: --admin-url).")
  .option('--admin-url <url>', "work through a gateway's admin API (http://host:9090) instead of Redis; the token from ADMIN_API_TOKEN or --admin-token-file")
  .option('--admin-token-file <file>', ADMIN_TOKEN_FILE_HELP)
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
    const started = await withBrownouts(setting, (brownouts) => brownouts.start(operation, options.minutes));
    process.stdout.write(`brownout of ${operation} started: refused with 410 brownout until ${started.end}\n`);
  });

brownout
  .command('stop <operationId>')
  .description("end the brownout in progress (an operator's, or a scheduled window's) on every replica")
  .action(async function stop(this: Command, operation: string) {
    const setting = loadSetting();
    requireDeprecated(this, setting, operation);
    const stopped = await withBrownouts(setting, (brownouts) => brownouts.stop(operation));
    const cancelled = stopped.scheduledUntil === undefined ? '' : `; the scheduled window stays cancelled until ${stopped.scheduledUntil}`;
    process.stdout.write(`brownout of ${operation} stopped${cancelled}\n`);
  });

brownout
  .command('list')
  .description('list active and scheduled brownouts')
  .option('--json', 'one JSON line: [{"operation", "state", "source", "start", "end"}]')
  .action(async (options: { json?: boolean }) => {
    const setting = loadSetting();
    printBrownouts(await withBrownouts(setting, (brownouts) => brownouts.list()), options.json === true);
  });

program
  .command('report')
  .description('per deprecated operation, every consumer that called it, across replicas (counts reach Redis within deprecationReport.flushIntervalMs)')
  .option('--json', 'one JSON line: [{"operation", "keyId", "consumer", "calls", "firstSeen", "lastSeen"}]')
  .action(async (options: { json?: boolean }) => {
    const setting = loadSetting();
    const client = adminClient();
    const rows = client
      ? await remoteReport(client)
      : await withToolRedis(setting.config.redis, 'petstore-gateway-deprecations', (redis) =>
          readDeprecationReport(new RedisDeprecatedCallStore(redis, setting.config.redis.keyPrefix), [...setting.described.keys()]),
        );
    printReport(rows, setting, options.json === true);
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Already reported on stderr by commander; --help and --version are the only non-errors it throws.
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : USAGE_ERROR);
  const known =
    error instanceof DeprecationsError ||
    error instanceof BrownoutAdminError ||
    error instanceof ConfigError ||
    error instanceof RedisUnreachableError ||
    error instanceof AdminApiError;
  process.stderr.write(`deprecations: ${known ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
}
