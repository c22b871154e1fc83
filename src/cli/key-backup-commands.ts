// `npm run keys -- export` and `import`: back up the key store to a file of JSON lines, and restore it (src/auth/key-backup.ts).
import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import { KeyAdminError } from '../auth/key-admin-error.ts';
import type { ImportSummary } from '../auth/key-backup.ts';
import { createKeyHasher } from '../auth/key-hash.ts';
import { ALLOW_NO_PEPPER, loadPepper } from '../auth/pepper.ts';
import { loadConfig } from '../config/load-config.ts';
import { systemClock } from '../time/clock.ts';
import { withToolRedis } from './tool-redis.ts';

/** Writes to stdout, waiting for it to drain: a large export holds one page in memory, not the whole file. */
function stdoutWriter(): (line: string) => Promise<void> {
  return (line) => new Promise((resolve, reject) => process.stdout.write(line, (error) => (error ? reject(error) : resolve())));
}

/**
 * Writes a new file beside `file` (same directory, so the rename is atomic), readable by its owner only (the hashes
 * let a thief test guessed keys offline if the pepper leaks too), and renames it over `file` only once the export is
 * whole and on disk: on any failure (Redis down, a full disk) `file` stays as it was and the new file is removed. A
 * symlink at `file` is replaced by the file, its target untouched (rename never follows it).
 */
async function withFileWriter(file: string, work: (write: (line: string) => Promise<void>) => Promise<void>): Promise<void> {
  const temporary = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.partial`);
  // `wx`: a new file, never one that is there (nor a link's target).
  const handle = await open(temporary, 'wx', 0o600);
  let renamed = false;
  try {
    await work(async (line) => {
      await handle.write(line);
    });
    await handle.sync();
    await handle.close();
    await rename(temporary, file);
    renamed = true;
  } finally {
    if (!renamed) {
      await handle.close().catch(() => undefined);
      await unlink(temporary).catch(() => undefined);
    }
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

/** Loaded when export or import runs, not at start: every other keys command starts without it (start-up is most of a CLI call). */
const keyBackup = () => import('../auth/key-backup.ts');

export function addKeyBackupCommands(program: Command): void {
  program
    .command('export')
    .description('write every key record and its hash (never a secret, never the pepper) as JSON lines, for a backup; Redis only')
    .option('--output <file>', 'write to this file, created readable by its owner only (mode 0600), instead of stdout')
    .action(async (options: { output?: string }) => {
      refuseRemote(program, 'export');
      const { exportKeys } = await keyBackup();
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
      const { checkExportFile, importKeys } = await keyBackup();
      const config = loadConfig();
      // The hashes restored must be this pepper's: production requires one, as `create` does.
      const fingerprint = createKeyHasher(loadPepper(config)).pepperFingerprint;
      // The whole file checked before Redis is asked (or even connected to): a wrong pepper, a damaged or huge line.
      const checked = await checkExportFile(file, fingerprint);
      const summary = await withToolRedis(config.redis, 'petstore-gateway-keys', (redis) =>
        importKeys(redis, checked, {
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
