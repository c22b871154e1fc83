// npm run config -- <command>: check a configuration file before it is applied (validate), or make a running gateway reload its own (reload).
import { Command, CommanderError } from 'commander';
import type { ReloadAnswer } from '../admin-api/routes.ts';
import { ConfigError, loadConfig } from '../config/load-config.ts';
import { systemClock } from '../time/clock.ts';
import { checkBeforeStart, ConfigCheckError } from '../wiring/check-config.ts';
import { ADMIN_TOKEN_FILE_HELP, AdminApiError, type AdminOptions, adminClientFrom } from './admin-client.ts';
import { printable, printableJson } from './printable.ts';

/** 2 for a usage error (commander's), 1 for a configuration that fails a check or a refused reload, as the other CLIs. */
const USAGE_ERROR = 2;

/** The faults of the configuration `file` (or GATEWAY_CONFIG's) with this environment over it, as start-up reads it; opening nothing. */
async function faultsOf(file: string | undefined): Promise<readonly string[]> {
  const env = file === undefined ? process.env : { ...process.env, GATEWAY_CONFIG: file };
  try {
    await checkBeforeStart(loadConfig(env), { clock: systemClock, env });
    return [];
  } catch (error) {
    if (error instanceof ConfigCheckError) return error.faults;
    if (error instanceof ConfigError) return [error.message];
    throw error;
  }
}

/** What a reload answered, one fact a line: what changed, what waits for a restart. */
function describeReload(answer: Extract<ReloadAnswer, { result: 'success' }>): string {
  // Escaped as every CLI escapes what a gateway answers: the keys are the gateway's words, not this process's.
  const list = (keys: readonly string[]) => (keys.length === 0 ? 'none' : keys.map(printable).join(', '));
  return `reloaded (configHash ${printable(answer.hash)})\nchanged: ${list(answer.changed)}\nneeds a restart: ${list(answer.needRestart)}\n`;
}

const program = new Command('config')
  .description("Check the gateway's configuration before it is applied, or make a running gateway reload it.")
  .showHelpAfterError()
  .exitOverride()
  .configureOutput({ outputError: (message, write) => write(`config: ${message}`) });

program
  .command('validate')
  .description(
    'run every check start-up and a reload run (schema, documents, brownout windows, key, token and pepper files) without opening a port or Redis; print OK or each fault',
  )
  .argument('[file]', 'the configuration file (default: GATEWAY_CONFIG, or config/gateway.yaml); environment variables apply as at start-up')
  .action(async (file: string | undefined) => {
    const faults = await faultsOf(file);
    if (faults.length === 0) {
      process.stdout.write('OK\n');
      return;
    }
    // As they are: each names its key or file, which is what the reader looks for at the start of the line.
    for (const fault of faults) process.stderr.write(`${fault}\n`);
    process.exitCode = 1;
  });

program
  .command('reload')
  .description('make a running gateway reload its configuration (POST /admin/config/reload), as SIGHUP does, and print what changed')
  .requiredOption('--admin-url <url>', "the gateway's admin listener (http://host:9090); the token from ADMIN_API_TOKEN or --admin-token-file")
  .option('--admin-token-file <file>', ADMIN_TOKEN_FILE_HELP)
  .option('--json', 'print the answer as JSON')
  .action(async (options: AdminOptions & { json?: boolean }) => {
    const client = adminClientFrom(options)!;
    const answer = await client.call<{ result: 'success'; changed: string[]; needRestart: string[]; configHash: string }>('POST', '/admin/config/reload');
    if (options.json === true) process.stdout.write(`${printableJson(answer)}\n`);
    else process.stdout.write(describeReload({ result: 'success', hash: answer.configHash, changed: answer.changed, needRestart: answer.needRestart }));
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : USAGE_ERROR);
  const known = error instanceof ConfigError || error instanceof AdminApiError;
  process.stderr.write(`config: ${known ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
}
