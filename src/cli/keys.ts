// npm run keys -- <command>: operators create, list, show, revoke and rotate API keys, in Redis or through a gateway's admin API.
import { Argument, Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ReplyError } from 'ioredis';
import { consumerNameProblem } from '../auth/consumer-name.ts';
import { KeyAdmin, KeyAdminError, type KeyOperations } from '../auth/key-admin.ts';
import { createKeyHasher } from '../auth/key-hash.ts';
import { ALLOW_NO_PEPPER, loadPepper } from '../auth/pepper.ts';
import { ConfigError, loadConfig } from '../config/load-config.ts';
import { ENVIRONMENTS, STABILITY_MARKERS, type Environment, type StabilityMarker } from '../config/schema.ts';
import { systemClock } from '../time/clock.ts';
import { ADMIN_TOKEN_FILE_HELP, AdminApiError, type AdminOptions, adminClientFrom, remoteKeys } from './admin-client.ts';
import { addKeyBackupCommands } from './key-backup-commands.ts';
import { addUsageCommand } from './usage-command.ts';
import { describe, printIssued, printKeyList, printRecord } from './key-output.ts';
import { printable, printableJson } from './printable.ts';
import { RedisUnreachableError, withToolRedis } from './tool-redis.ts';

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed) || parsed < 1) throw new InvalidArgumentError('must be a positive integer');
  return parsed;
}

/** A quota's new value: a count, or `none` to remove it (not null here: commander takes a parser's null for no value). */
function quotaOrNone(value: string): number | 'none' {
  if (value === 'none') return value;
  try {
    return positiveInteger(value);
  } catch {
    throw new InvalidArgumentError('must be a positive integer, or none to remove the quota');
  }
}

/** A set-quota flag as the key operations take it: absent leaves the quota, null removes it. */
const quotaChange = (value: number | 'none' | undefined): number | null | undefined => (value === 'none' ? null : value);

function futureInstant(value: string): string {
  const at = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(at)) throw new InvalidArgumentError('must be an ISO 8601 date-time, e.g. 2027-01-31T00:00:00Z');
  if (at <= systemClock.now()) throw new InvalidArgumentError('must be in the future');
  return new Date(at).toISOString();
}

/** Checked before Redis is asked, as the admin API checks it (src/auth/consumer-name.ts). */
function consumerName(value: string): string {
  const problem = consumerNameProblem(value);
  if (problem !== undefined) throw new InvalidArgumentError(problem);
  return value;
}

function collectEnvironment(value: string, previous: Environment[] = []): Environment[] {
  if (!(ENVIRONMENTS as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${ENVIRONMENTS.join(', ')}`);
  return [...previous, value as Environment];
}

function collectMarker(value: string, previous: StabilityMarker[] = []): StabilityMarker[] {
  if (!(STABILITY_MARKERS as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${STABILITY_MARKERS.join(', ')}`);
  return [...previous, value as StabilityMarker];
}

/** `--consumer`, or `--name` (deprecated, said on stderr); neither, or both differing, is a usage error (exit 2). */
function consumerOf(command: Command, options: { consumer?: string; name?: string }): string {
  const { consumer, name } = options;
  if (consumer !== undefined && name !== undefined && consumer !== name)
    command.error('error: --consumer and --name (its deprecated spelling) differ: give --consumer only');
  if (name !== undefined) process.stderr.write('keys: warning: --name is deprecated; use --consumer\n');
  const chosen = consumer ?? name;
  if (chosen === undefined) command.error("error: required option '--consumer <consumer>' not specified");
  return chosen;
}

/** With --admin-url: the gateway's admin API does the work, so neither Redis access nor the pepper is needed here. */
function remote(): KeyOperations | undefined {
  const client = adminClientFrom(program.opts<AdminOptions>());
  return client && remoteKeys(client);
}

/** `hashes`: the command hashes a new key, so production requires a pepper; revoking a leaked key by id must not wait for one. */
async function withAdmin<T>(work: (admin: KeyOperations) => Promise<T>, { hashes = false } = {}): Promise<T> {
  const viaApi = remote();
  if (viaApi) return work(viaApi);
  const config = loadConfig();
  // Before Redis: a pepper setting that is wrong is reported whether or not Redis answers.
  const hashKey = createKeyHasher(loadPepper(config, hashes ? process.env : { ...process.env, [ALLOW_NO_PEPPER]: 'true' }));
  return withToolRedis(config.redis, 'petstore-gateway-keys', (redis) =>
    work(
      new KeyAdmin(redis, {
        keyPrefix: config.redis.keyPrefix,
        hashKey,
        clock: systemClock,
        onPepperRecorded: (existingKeys) =>
          process.stderr.write(
            `keys: note: this Redis held ${existingKeys} key(s) but no pepper fingerprint (written before fingerprints existed); recorded this pepper's, assuming they were made with it. If gateways now report the pepper mismatched, see docs/operations.md, "Pepper fingerprint".\n`,
          ),
        onPepperMismatch: (message) => process.stderr.write(`keys: warning: ${message} (this command does not depend on the pepper, so it ran)\n`),
        onAnnouncementFailed: (keyId, error) =>
          process.stderr.write(
            `keys: warning: key ${keyId} was changed but the change was not announced (${error instanceof Error ? error.message : String(error)}); gateways see it by their epoch check within a second\n`,
          ),
      }),
    ),
  );
}

/** The exit codes docs/operations.md gives: 2 for a usage error (commander's), 1 for a runtime error (Redis, unknown id, configuration). */
const USAGE_ERROR = 2;

const program = new Command('keys')
  .description("Manage the gateway's API keys in Redis (REDIS_URL), or through a gateway's admin API (--admin-url). Secrets are shown once, at creation.")
  .option(
    '--admin-url <url>',
    "manage keys through a gateway's admin API (http://host:9090) instead of Redis; the token from ADMIN_API_TOKEN or --admin-token-file",
  )
  .option('--admin-token-file <file>', ADMIN_TOKEN_FILE_HELP)
  .showHelpAfterError()
  // Commander throws instead of exiting, so the exit code is decided below; set before the subcommands, which inherit both.
  .exitOverride()
  .configureOutput({ outputError: (message, write) => write(`keys: ${message}`) });

program
  .command('create')
  .description('create a key and print it once')
  .option('--consumer <consumer>', 'who the key is for (required): printable, at most 128 characters', consumerName)
  .option('--name <consumer>', 'deprecated spelling of --consumer', consumerName)
  .addOption(
    new Option(
      '--environment <environment>',
      "where the key is valid; repeat for both (default: GATEWAY_ENVIRONMENT, or staging; with --admin-url, the gateway's)",
    ).argParser(collectEnvironment),
  )
  .option('--expires-at <iso>', 'when the key stops working', futureInstant)
  .option('--rate-limit-per-minute <n>', "this key's own rate limit", positiveInteger)
  .option('--quota-per-day <n>', 'requests the key is admitted per UTC day, across gateways (default: no quota)', positiveInteger)
  .option('--quota-per-month <n>', 'requests the key is admitted per UTC month, across gateways (default: no quota)', positiveInteger)
  .addOption(new Option('--opt-in <marker>', 'call operations marked experimental or beta where config says opt-in; repeat for both').argParser(collectMarker))
  .option('--json', 'print one JSON line {"id", "key", ...}')
  .action(async function create(
    this: Command,
    options: {
      consumer?: string;
      name?: string;
      environment?: Environment[];
      expiresAt?: string;
      rateLimitPerMinute?: number;
      quotaPerDay?: number;
      quotaPerMonth?: number;
      optIn?: StabilityMarker[];
      json?: boolean;
    },
  ) {
    const consumer = consumerOf(this, options);
    // Through the admin API none given means the gateway's own environment, which the API fills in.
    const environments = options.environment ?? (program.opts().adminUrl === undefined ? [loadConfig().environment] : []);
    const issued = await withAdmin(
      (admin) =>
        admin.create({
          consumer,
          environments,
          ...(options.expiresAt === undefined ? {} : { expiresAt: options.expiresAt }),
          ...(options.rateLimitPerMinute === undefined ? {} : { rateLimitPerMinute: options.rateLimitPerMinute }),
          ...(options.quotaPerDay === undefined ? {} : { quotaPerDay: options.quotaPerDay }),
          ...(options.quotaPerMonth === undefined ? {} : { quotaPerMonth: options.quotaPerMonth }),
          ...(options.optIn === undefined ? {} : { optedIn: options.optIn }),
        }),
      { hashes: true },
    );
    printIssued(issued, options.json === true);
  });

program
  .command('list')
  .description('list keys (never their secrets)')
  .option('--json', 'print one JSON array of every key')
  .action(async (options: { json?: boolean }) => {
    // Page after page until the last: a page that fails ends the command with 1, never a shorter list.
    await withAdmin((admin) => printKeyList(admin.pages(), options.json === true));
  });

program
  .command('show <id>')
  .description('show one key')
  .option('--json', 'print JSON')
  .action(async (id: string, options: { json?: boolean }) => {
    printRecord(await withAdmin((admin) => admin.show(id)), options.json === true);
  });

program
  .command('revoke <id>')
  .description('revoke a key; every gateway refuses it within a second')
  .option('--json', 'print JSON')
  .action(async (id: string, options: { json?: boolean }) => {
    printRecord(await withAdmin((admin) => admin.revoke(id)), options.json === true);
  });

program
  .command('rotate <id>')
  .description('issue a new secret for the same consumer; the old key is revoked, or expires after the overlap')
  .option('--overlap-seconds <n>', 'keep the old key working this long', positiveInteger)
  .option('--json', 'print one JSON line for the new key, with "previous"')
  .action(async (id: string, options: { overlapSeconds?: number; json?: boolean }) => {
    const { issued, previous } = await withAdmin((admin) => admin.rotate(id, options.overlapSeconds ?? 0), { hashes: true });
    if (options.json) {
      process.stdout.write(`${printableJson({ ...issued.record, key: issued.key, previous })}\n`);
      return;
    }
    printIssued(issued, false);
    process.stdout.write(`\nprevious key:\n${describe(previous)}\n`);
  });

program
  .command('set-limit')
  .description("set a key's own rate limit, requests per minute")
  .argument('<id>')
  .addArgument(new Argument('<perMinute>').argParser(positiveInteger))
  .option('--json', 'print JSON')
  .action(async (id: string, perMinute: number, options: { json?: boolean }) => {
    printRecord(await withAdmin((admin) => admin.setRateLimit(id, perMinute)), options.json === true);
  });

program
  .command('set-opt-in')
  .description('set the stability markers (experimental, beta) a key opted in to; none clears them')
  .argument('<id>')
  .addArgument(new Argument('[markers...]').choices(STABILITY_MARKERS))
  .option('--json', 'print JSON')
  .action(async (id: string, markers: StabilityMarker[], options: { json?: boolean }) => {
    printRecord(await withAdmin((admin) => admin.setOptIn(id, markers)), options.json === true);
  });

program
  .command('set-quota')
  .description("set, change or remove a key's quotas (requests per UTC day, per UTC month); every gateway sees it within a second")
  .argument('<id>')
  .option('--per-day <n>', 'requests per UTC day; none removes the daily quota', quotaOrNone)
  .option('--per-month <n>', 'requests per UTC month; none removes the monthly quota', quotaOrNone)
  .option('--json', 'print JSON')
  .action(async function setQuota(this: Command, id: string, options: { perDay?: number | 'none'; perMonth?: number | 'none'; json?: boolean }) {
    const [perDay, perMonth] = [quotaChange(options.perDay), quotaChange(options.perMonth)];
    // A flag left out leaves that quota as it is; with neither there is nothing to change.
    if (perDay === undefined && perMonth === undefined) this.error('error: give --per-day, --per-month or both (none removes a quota)');
    const change = { ...(perDay === undefined ? {} : { perDay }), ...(perMonth === undefined ? {} : { perMonth }) };
    printRecord(await withAdmin((admin) => admin.setQuota(id, change)), options.json === true);
  });

// Backup and restore: export, import (src/cli/key-backup-commands.ts).
addKeyBackupCommands(program);

// Usage per consumer (src/cli/usage-command.ts).
addUsageCommand(program, () => adminClientFrom(program.opts<AdminOptions>()));

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Already reported on stderr by commander; --help and --version are the only non-errors it throws.
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : USAGE_ERROR);
  // Redis's own refusal of a command (a key of the wrong type) is its message; a timeout or a lost connection too.
  const fromRedis = (failure: Error) => failure instanceof ReplyError || /^(Command timed out|Connection is closed)/.test(failure.message);
  const known =
    error instanceof KeyAdminError ||
    error instanceof ConfigError ||
    error instanceof RedisUnreachableError ||
    error instanceof AdminApiError ||
    (error instanceof Error && fromRedis(error));
  // A key core's message can name ids read from Redis (a successor, a damaged key): escaped as any value printed.
  const message = error instanceof KeyAdminError ? printable(error.message) : known ? (error as Error).message : undefined;
  process.stderr.write(`keys: ${message ?? (error instanceof Error ? error.stack : String(error))}\n`);
  process.exit(1);
}
