// Runs `npm run keys --` (its entry point) as operators do, and returns what it printed.
import { execFile } from 'node:child_process';
import { PROJECT_ROOT } from './start-gateway-process.ts';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runKeysCli(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['src/cli/keys.ts', ...args],
      { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
