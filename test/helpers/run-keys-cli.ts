// Runs the operators' CLIs (`npm run keys --`, `npm run deprecations --`: their entry points) as operators do, and returns what they printed.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { DEFAULT_CONFIG_FILE } from '../../src/config/load-config.ts';
import { PROJECT_ROOT } from '../../support/start-gateway-process.ts';
import { scaled, TIME_SCALE } from '../../support/time-scale.ts';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(script: string, args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      // As the npm scripts run them: the compile cache on (src/cli/compile-cache.mjs).
      ['--import', './src/cli/compile-cache.mjs', script, ...args],
      // A listing of 50,000 keys is some 8 MB of JSON: well past execFile's default of 1 MiB.
      { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: scaled(60_000), maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const scaledConfigs = new Map<number, string>();

/**
 * config/gateway.yaml with its Redis timeouts (a command's 500 ms, a connection's 2 s) times `scale`, for the CLIs that
 * talk to Redis: on a loaded machine a CLI's first command may take longer than a quiet machine's figure. Its interface
 * document is named by an absolute path (the copy lives elsewhere); removed when the test process exits.
 */
function scaledDefaultConfig(scale: number): string {
  const made = scaledConfigs.get(scale);
  if (made !== undefined) return made;
  const settings = parse(readFileSync(DEFAULT_CONFIG_FILE, 'utf8')) as { contract: string; redis?: Record<string, unknown> };
  const redis = settings.redis ?? {};
  const ms = (value: unknown, byDefault: number) => Math.round((typeof value === 'number' ? value : byDefault) * scale);
  const copy = {
    ...settings,
    contract: resolve(dirname(DEFAULT_CONFIG_FILE), settings.contract),
    redis: { ...redis, commandTimeoutMs: ms(redis.commandTimeoutMs, 500), connectTimeoutMs: ms(redis.connectTimeoutMs, 2000) },
  };
  const dir = mkdtempSync(join(tmpdir(), 'cli-config-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, stringify(copy));
  scaledConfigs.set(scale, file);
  return file;
}

/** The env a Redis-talking CLI runs with: the scaled copy of the default file, unless the test names a file or the scale is 1. */
export function withScaledRedisTimeouts(env: Record<string, string>, scale: number = TIME_SCALE): Record<string, string> {
  if (scale === 1 || env.GATEWAY_CONFIG !== undefined) return env;
  return { GATEWAY_CONFIG: scaledDefaultConfig(scale), ...env };
}

export const runKeysCli = (args: readonly string[], env: Record<string, string>) => runCli('src/cli/keys.ts', args, withScaledRedisTimeouts(env));

export const runDeprecationsCli = (args: readonly string[], env: Record<string, string>) =>
  runCli('src/cli/deprecations.ts', args, withScaledRedisTimeouts(env));
