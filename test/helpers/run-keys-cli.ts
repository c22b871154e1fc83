// Runs the operators' CLIs (`npm run keys --`, `npm run deprecations --`: their entry points) as operators do, and returns what they printed.
import { execFile } from 'node:child_process';
import { PROJECT_ROOT } from '../../support/start-gateway-process.ts';
import { scaled } from '../../support/time-scale.ts';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(script: string, args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      // As the npm scripts run them: the compile cache on (src/cli/compile-cache.ts).
      ['--import', './src/cli/compile-cache.ts', script, ...args],
      // A listing of 50,000 keys is some 8 MB of JSON: well past execFile's default of 1 MiB.
      { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: scaled(60_000), maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

export const runKeysCli = (args: readonly string[], env: Record<string, string>) => runCli('src/cli/keys.ts', args, env);

export const runDeprecationsCli = (args: readonly string[], env: Record<string, string>) => runCli('src/cli/deprecations.ts', args, env);
