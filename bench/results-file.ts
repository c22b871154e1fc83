// Writes one run of `npm run bench` as a JSON file (bench/results/<date>-<name>.json): what ran, where, and every figure.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';

/** Where and on what a run was made: enough to tell two result files' machines and builds apart. */
export interface RunOrigin {
  date: string;
  commit: string;
  /** Files changed and not committed when the run started: the commit alone does not name the build. */
  uncommittedChanges: boolean;
  node: string;
  cpu: string;
  cores: number;
}

/** git's answer in `root`, trimmed; undefined where git fails (not a checkout, no git). */
function git(root: string, args: readonly string[]): string | undefined {
  try {
    return execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

export function runOrigin(root: string, now: Date): RunOrigin {
  return {
    date: now.toISOString(),
    commit: git(root, ['rev-parse', 'HEAD']) ?? 'unknown',
    uncommittedChanges: (git(root, ['status', '--porcelain', '--untracked-files=no']) ?? '') !== '',
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
  };
}

/** The run's default name: the short commit, so that a file says which build it measured. */
export function defaultRunName(root: string): string {
  return git(root, ['rev-parse', '--short', 'HEAD']) ?? 'run';
}

/** Why `name` cannot name a results file; undefined when it can. */
export function runNameProblem(name: string): string | undefined {
  return /^[\w.-]+$/.test(name) && !name.startsWith('.') ? undefined : "letters, digits, '.', '_' and '-' only, not starting with '.' (it names a file)";
}

/**
 * Writes `record` to `<dir>/<YYYY-MM-DD>-<name>.json`, never over an earlier run's file (a second run of
 * the day under the same name gets `-2`, then `-3`); returns the path written.
 */
export function writeRunResults(dir: string, name: string, now: Date, record: unknown): string {
  const problem = runNameProblem(name);
  if (problem !== undefined) throw new Error(`run name ${name}: ${problem}`);
  mkdirSync(dir, { recursive: true });
  const stem = `${now.toISOString().slice(0, 10)}-${name}`;
  let path = join(dir, `${stem}.json`);
  for (let suffix = 2; existsSync(path); suffix++) path = join(dir, `${stem}-${suffix}.json`);
  writeFileSync(path, `${JSON.stringify(record, null, 2)}\n`);
  return path;
}
