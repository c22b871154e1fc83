// `npm run keys -- usage`: each consumer's calls by day or month, from Redis or through a gateway's admin API.
import { type Command, Option } from 'commander';
import { loadConfig } from '../config/load-config.ts';
import type { UsageQuery, UsageRow } from '../observability/usage-report.ts';
import { systemClock } from '../time/clock.ts';
import type { AdminClient } from './admin-client.ts';
import { printable, printableJson } from './printable.ts';
import { withToolRedis } from './tool-redis.ts';

interface UsageOptions {
  from: string;
  to: string;
  keyId?: string;
  granularity: string;
  json?: boolean;
  csv?: boolean;
}

/** The rows through the admin API: the gateway checks the query and reads its store. */
async function remoteUsage(client: AdminClient, query: UsageQuery): Promise<UsageRow[]> {
  const params = new URLSearchParams({
    from: query.from,
    to: query.to,
    granularity: query.granularity,
    ...(query.keyId === undefined ? {} : { keyId: query.keyId }),
  });
  return client.call<UsageRow[]>('GET', `/admin/usage?${params}`);
}

/** A table for people: one line a row, the counts right-aligned; names escaped, as everything read from Redis. */
function table(rows: readonly UsageRow[]): string {
  if (rows.length === 0) return 'no usage in this range\n';
  const header = ['period', 'key id', 'consumer', 'operation', 'admitted', 'refused (quota)', 'refused (rate limit)'];
  const cells = rows.map((row) =>
    [row.period, row.keyId, row.consumer, row.operation, row.admitted, row.refusedQuota, row.refusedRateLimit].map((cell) => printable(String(cell))),
  );
  const widths = header.map((title, column) => Math.max(title.length, ...cells.map((line) => line[column]!.length)));
  const render = (line: readonly string[]) =>
    line
      .map((cell, column) => (column >= 4 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  return `${[render(header), ...cells.map(render)].join('\n')}\n`;
}

/** The granularities `--granularity` takes: USAGE_GRANULARITIES of usage-report.ts. */
export const GRANULARITIES = ['day', 'month'] as const;

/** Adds `usage` to the keys CLI; `remote` is the admin API's client when --admin-url is given. */
export function addUsageCommand(program: Command, remote: () => AdminClient | undefined): void {
  program
    .command('usage')
    .description("each consumer's calls per operation by UTC day or month: admitted, refused by a quota, refused by the rate limit")
    .requiredOption('--from <day>', 'the first UTC day, YYYY-MM-DD')
    .requiredOption('--to <day>', 'the last UTC day, YYYY-MM-DD, included')
    .option('--key-id <id>', "one key's usage (default: every key's)")
    // usage-report.ts's USAGE_GRANULARITIES, written out: its module is loaded only when this command runs (test/unit/cli holds the two alike).
    .addOption(new Option('--granularity <unit>', 'one row per day or per month').choices(GRANULARITIES).default('day'))
    .addOption(new Option('--json', 'print JSON').conflicts('csv'))
    .option('--csv', 'print CSV (RFC 4180), as GET /admin/usage with Accept: text/csv')
    .action(async function usage(this: Command, options: UsageOptions) {
      // Loaded here, not at start: every other keys command starts without them (a CLI call's start-up is most of its time).
      const [{ GatewayError }, { RedisUsageStore }, { checkUsageQuery, readUsageReport, toUsageCsv }] = await Promise.all([
        import('../errors/gateway-error.ts'),
        import('../observability/redis-usage-store.ts'),
        import('../observability/usage-report.ts'),
      ]);
      const client = remote();
      const config = client === undefined ? loadConfig() : undefined;
      let query: UsageQuery;
      try {
        // Through the API its own retention bounds the range; the gateway refuses a longer one.
        // Named as this command's options, not the admin API's query parameters.
        query = checkUsageQuery(options, config?.usage.retentionDays ?? Number.MAX_SAFE_INTEGER, {
          full: (name) => `--${name}`,
          short: (name) => `--${name}`,
        });
      } catch (error) {
        if (error instanceof GatewayError) this.error(`error: ${error.message}`);
        throw error;
      }
      const rows =
        client !== undefined
          ? await remoteUsage(client, query)
          : await withToolRedis(config!.redis, 'petstore-gateway-keys', (redis) =>
              readUsageReport(
                new RedisUsageStore(redis, { keyPrefix: config!.redis.keyPrefix, clock: systemClock, retentionDays: config!.usage.retentionDays }),
                query,
              ),
            );
      if (options.csv) process.stdout.write(toUsageCsv(rows));
      else if (options.json) process.stdout.write(`${printableJson(rows)}\n`);
      else process.stdout.write(table(rows));
    });
}
