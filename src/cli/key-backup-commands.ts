// `npm run keys -- export` and `import`: back up the key store to a file of JSON lines, and restore it (src/auth/key-backup.ts).
import { open } from 'node:fs/promises';
import type { Command } from 'commander';
import { KeyAdminError } from '../auth/key-admin-error.ts';
import { exportKeys, importKeys, type ImportSummary } from '../auth/key-backup.ts';
import { createKeyHasher } from '../auth/key-hash.ts';
import { ALLOW_NO_PEPPER, loadPepper } from '../auth/pepper.ts';
import { loadConfig } from '../config/load-config.ts';
import { systemClock } from '../time/clock.ts';
import { withToolRedis } from './tool-redis.ts';

/** Writes to stdout, waiting for it to drain: a large export holds one page in memory, not the whole file. */
function stdoutWriter(): (line: string) => Promise<void> {
  return (line) => new Promise((resolve, reject) => process.stdout.write(line, (error) => (error ? reject(error) : resolve())));
}

/** Writes to `file`, created (or truncated) readable by its owner only: the hashes let a thief test guessed keys offline if the pepper leaks too. */
async function withFileWriter(file: string, work: (write: (line: string) => Promise<void>) => Promise<void>): Promise<void> {
  const handle = await open(file, 'w', 0o600);
  try {
    // An existing file keeps its mode on open: narrowed here too.
    await handle.chmod(0o600);
    await work(async (line) => {
      await handle.write(line);
    });
  } finally {
    await handle.close();
  }
}

function describeSummary(summary: ImportSummary): string {
  const lead = summary.dryRun ? 'dry run, nothing written: would have ' : '';
  const counts = summary.dryRun
    ? `created ${summary.created}, changed ${summary.changed}, left unchanged ${summary.unchanged}`
    : `created ${summary.created}, changed ${summary.changed}, unchanged ${summary.unchanged}`;
  const revoked = summary.keptRevoked > 0 ? `\n${summary.keptRevoked} key(s) revoked in Redis but not in the file stay revoked` : '';
  return `${lead}${counts}${revoked}\n`;
}

/** Refused with --admin-url: the admin API has no export or import (the hashes never leave Redis through HTTP). */
function refuseRemote(program: Command, name: string): void {
  if (program.opts().adminUrl !== undefined)
    throw new KeyAdminError('invalid', `${name} works on Redis directly (REDIS_URL); it is not available with --admin-url`);
}

export function addKeyBackupCommands(program: Command): void {
  program
    .command('export')
    .description('write every key record and its hash (never a secret, never the pepper) as JSON lines, for a backup; Redis only')
    .option('--output <file>', 'write to this file, created readable by its owner only (mode 0600), instead of stdout')
    .action(async (options: { output?: string }) => {
      refuseRemote(program, 'export');
      const config = loadConfig();
      // The pepper is only a fallback name here (Redis's fingerprint is the keys'): an unpeppered CLI may export.
      const fallbackFingerprint = createKeyHasher(loadPepper(config, { ...process.env, [ALLOW_NO_PEPPER]: 'true' })).pepperFingerprint;
      const run = (write: (line: string) => Promise<void>) =>
        withToolRedis(config.redis, 'petstore-gateway-keys', async (redis) => {
          const header = await exportKeys(redis, { keyPrefix: config.redis.keyPrefix, clock: systemClock, fallbackFingerprint, write });
          if (options.output !== undefined) process.stderr.write(`keys: exported ${header.keys} key(s) to ${options.output}\n`);
        });
      await (options.output === undefined ? run(stdoutWriter()) : withFileWriter(options.output, run));
    });

  program
    .command('import')
    .description(
      'restore keys from an export into Redis: creates absent keys, makes present ones match the file, never un-revokes a key; refuses a file made with another pepper',
    )
    .argument('<file>', 'a file written by `keys export`')
    .option('--dry-run', 'print what would be created, changed and left unchanged; write nothing')
    .option('--json', 'print the summary as one JSON line')
    .action(async (file: string, options: { dryRun?: boolean; json?: boolean }) => {
      refuseRemote(program, 'import');
      const config = loadConfig();
      // The hashes restored must be this pepper's: production requires one, as `create` does.
      const fingerprint = createKeyHasher(loadPepper(config)).pepperFingerprint;
      const summary = await withToolRedis(config.redis, 'petstore-gateway-keys', (redis) =>
        importKeys(redis, file, {
          keyPrefix: config.redis.keyPrefix,
          fingerprint,
          dryRun: options.dryRun === true,
          onPepperRecorded: (existingKeys) =>
            process.stderr.write(`keys: note: this Redis held ${existingKeys} key(s) but no pepper fingerprint; recorded the file's (this CLI's pepper's)\n`),
        }),
      );
      process.stdout.write(options.json ? `${JSON.stringify(summary)}\n` : describeSummary(summary));
    });
}
