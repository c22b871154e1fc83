// npm run shadow -- report: where staging answered differently from production, per operation, from Redis or through a gateway's admin API.
import { Command, CommanderError } from 'commander';
import type { ShadowReportBody } from '../shadow/report-model.ts';
import { printableJson } from './printable.ts';
import { shadowReportTable } from './shadow-output.ts';

// Only commander and the printing are loaded up front: `--help` and a usage error answer before the configuration,
// Redis or fetch are loaded, and each path loads only what it uses.

/** The exit codes docs/operations.md gives: 2 for a usage error (commander's), 1 for a runtime error (Redis, configuration, the admin API). */
const USAGE_ERROR = 2;

interface ReportOptions {
  from?: string;
  to?: string;
  operation?: string;
  json?: boolean;
}

interface AdminOptions {
  adminUrl?: string;
  adminTokenFile?: string;
}

/** The report through the admin API: the gateway checks the query against its own retention and reads its Redis. */
async function remoteReport(options: AdminOptions, query: ReportOptions): Promise<ShadowReportBody> {
  const { adminClientFrom } = await import('./admin-client.ts');
  const client = adminClientFrom(options)!;
  const params = new URLSearchParams(
    Object.entries({ from: query.from, to: query.to, operation: query.operation }).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  return client.call<ShadowReportBody>('GET', `/admin/shadow/report${params.size === 0 ? '' : `?${params}`}`);
}

/** The report from Redis, as the gateway's configuration names it (REDIS_URL, redis.keyPrefix, shadow.report.retentionDays). */
async function localReport(command: Command, query: ReportOptions): Promise<ShadowReportBody> {
  const [{ loadConfig }, { GatewayError }, { checkShadowReportQuery }, { redisShadowReportReader }, { systemClock }, { withToolRedis }] = await Promise.all([
    import('../config/load-config.ts'),
    import('../errors/gateway-error.ts'),
    import('../shadow/report-query.ts'),
    import('../shadow/report-store.ts'),
    import('../time/clock.ts'),
    import('./tool-redis.ts'),
  ]);
  const config = loadConfig();
  const retentionDays = config.shadow.report.retentionDays;
  let checked: ReturnType<typeof checkShadowReportQuery>;
  try {
    // Named as this command's options, not the admin API's query parameters.
    checked = checkShadowReportQuery(query, { retentionDays, now: systemClock.now }, { full: (name) => `--${name}`, short: (name) => `--${name}` });
  } catch (error) {
    if (error instanceof GatewayError) command.error(`error: ${error.message}`);
    throw error;
  }
  return withToolRedis(config.redis, 'petstore-gateway-shadow', (redis) =>
    redisShadowReportReader(redis, { keyPrefix: config.redis.keyPrefix, clock: systemClock, retentionDays }).read(checked),
  );
}

const program = new Command('shadow')
  .description("Production requests shadowed to staging: where staging answered differently (Redis: REDIS_URL; or a gateway's admin API: --admin-url).")
  .option('--admin-url <url>', "work through a gateway's admin API (http://host:9090) instead of Redis; the token from ADMIN_API_TOKEN or --admin-token-file")
  .option('--admin-token-file <file>', 'a file whose first line is the admin token (with --admin-url)')
  .showHelpAfterError()
  // Commander throws instead of exiting, so the exit code is decided below; set before the subcommands, which inherit both.
  .exitOverride()
  .configureOutput({ outputError: (message, write) => write(`shadow: ${message}`) });

program
  .command('report')
  .description(
    'per operation, the comparisons by result and the JSON pointers where staging differed from production, by count, noise apart, across replicas (counts reach Redis within shadow.report.flushIntervalMs)',
  )
  .option('--from <when>', 'where the range starts: an RFC 3339 date-time or a UTC day, YYYY-MM-DD (default: a day before --to)')
  .option('--to <when>', 'where it ends: an RFC 3339 date-time, or a UTC day, included whole (default: now)')
  .option('--operation <operationId>', "one operation's report (default: every operation compared)")
  .option('--json', 'print the report as GET /admin/shadow/report answers it, on one line')
  .action(async function report(this: Command, options: ReportOptions) {
    const admin = program.opts<AdminOptions>();
    const body = admin.adminUrl !== undefined ? await remoteReport(admin, options) : await localReport(this, options);
    process.stdout.write(options.json ? `${printableJson(body)}\n` : shadowReportTable(body));
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Already reported on stderr by commander; --help and --version are the only non-errors it throws.
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : USAGE_ERROR);
  // The operator's errors by name: the modules that define them are loaded only on the path that throws them.
  const known = error instanceof Error && ['ConfigError', 'RedisUnreachableError', 'AdminApiError'].includes(error.name);
  const fromRedis = error instanceof Error && (error.name === 'ReplyError' || /^(Command timed out|Connection is closed)/.test(error.message));
  process.stderr.write(`shadow: ${known || fromRedis ? (error as Error).message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
}
