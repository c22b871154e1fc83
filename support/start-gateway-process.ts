// Runs the real gateway (npm start's entry point) as a child process, as production does.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import packageJson from '../package.json' with { type: 'json' };
import { scaled } from './time-scale.ts';

export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * node's arguments in `npm start` (`exec node`, its V8 flags, then the entry point): test and bench processes, and
 * the image's CMD (test/unit/deploy/dockerfile.test.ts), start the gateway exactly as production does.
 */
export const START_ARGS: readonly string[] = ((words) => words.slice(words.indexOf('node') + 1))(packageJson.scripts.start.split(' '));

/**
 * Compiles the gateway as `npm run build` does (src/ to dist/), so that the processes tests and benches
 * start run what production runs. vitest's global set-up calls it once per run.
 */
export function buildGateway(): void {
  const [command, ...args] = packageJson.scripts.build.split(' ');
  if (command !== 'tsc') throw new Error(`npm run build should run tsc, runs ${command}`);
  execFileSync(process.execPath, [join(PROJECT_ROOT, 'node_modules/typescript/bin/tsc'), ...args], { cwd: PROJECT_ROOT, stdio: 'inherit' });
}

export interface GatewayProcess {
  port: number;
  adminPort: number;
  child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function startGatewayProcess(env: Record<string, string>): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [...START_ARGS], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', ADMIN_PORT: '0', SHUTDOWN_DRAIN_DELAY_MS: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const deadline = Date.now() + scaled(15_000);
  let ports: { port: number; adminPort: number } | undefined;
  while (!ports) {
    const line = output.split('\n').find((entry) => entry.includes('"gateway listening"'));
    if (line) ports = JSON.parse(line) as { port: number; adminPort: number };
    else if (child.exitCode !== null || Date.now() > deadline) {
      const exitedEarly = child.exitCode !== null;
      // Not left running when it never said it listens (a slow start past the deadline): the caller has nothing to stop.
      if (!exitedEarly && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      const why = exitedEarly ? `exited with ${child.exitCode}` : `did not listen within ${scaled(15_000)} ms (TEST_TIME_SCALE raises it)`;
      throw new Error(`gateway did not start: it ${why}:\n${output}`);
    } else await sleep(25);
  }
  return {
    port: ports.port,
    adminPort: ports.adminPort,
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Polls until `probe` holds or the deadline (a quiet machine's, scaled by TEST_TIME_SCALE) passes; returns how long it took. */
export async function waitFor(probe: () => Promise<boolean>, deadlineMs = 10_000, everyMs = 20): Promise<number> {
  const started = Date.now();
  const deadline = scaled(deadlineMs);
  while (!(await probe())) {
    if (Date.now() - started > deadline) throw new Error(`condition not met within ${deadline} ms`);
    await sleep(everyMs);
  }
  return Date.now() - started;
}

/**
 * Resolves once the gateway's /readyz answers 200: "listening" comes before Redis is connected, and a
 * request in between is (rightly) refused 503.
 */
export async function waitUntilReady(gateway: { adminPort: number }, deadlineMs = 15_000): Promise<void> {
  await waitFor(async () => (await fetch(`http://127.0.0.1:${gateway.adminPort}/readyz`)).status === 200, deadlineMs);
}
