// The built gateway started as a supervisor starts it (`npm start` or bin/petstore-gateway), in a process group of its own led by
// the child, as a service's under systemd: the group can then be signalled as systemd does (KillMode=control-group), and killed whole.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';
import { DEFAULT_CONFIG_FILE } from '../../src/config/load-config.ts';
import { PROJECT_ROOT, waitFor, waitUntilReady } from '../../support/start-gateway-process.ts';

/** The two ways an operator starts the gateway: the command and its arguments. */
export const START = {
  'npm start': ['npm', ['start']],
  'bin/petstore-gateway': [join(PROJECT_ROOT, 'bin/petstore-gateway'), []],
} as const;
export type StartedBy = keyof typeof START;

/** The gateway's log lines about its shutdown, as written (docs/operations.md, "Client connections"). */
export const SHUTTING_DOWN = '"msg":"shutting down: readiness is now false"';
export const STOPPED = '"msg":"gateway stopped"';
export const repeatIgnored = (signal: NodeJS.Signals): string => `"msg":"${signal} ignored: the gateway is already draining (SIGKILL ends it at once)"`;

/** npm and bin/petstore-gateway run the `node` they find first on PATH: the project's Node 24, not the machine's. */
const NODE_24_BIN = dirname(realpathSync(join(PROJECT_ROOT, 'node_modules/.bin/node')));

/** The environment a gateway group starts with, before the caller's: Node 24 first on PATH, both ports chosen by the system, no drain delay. */
export function groupEnvironment(env: Record<string, string>): Record<string, string> {
  return {
    PATH: `${NODE_24_BIN}${delimiter}${process.env.PATH ?? ''}`,
    HOME: process.env.HOME ?? '/tmp',
    npm_config_update_notifier: 'false',
    PORT: '0',
    ADMIN_PORT: '0',
    LOG_LEVEL: 'info',
    SHUTDOWN_DRAIN_DELAY_MS: '0',
    ...env,
  };
}

export interface GatewayExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** performance.now() when the group's leader exited. */
  at: number;
}

export interface GatewayGroup {
  startedBy: StartedBy;
  /** The group's leader: npm, or the gateway itself (bin/petstore-gateway execs it). Its pid is the group's id. */
  leader: ChildProcess;
  /** The gateway's own pid: under npm, npm's child (it says so in its first lines). */
  gatewayPid: number;
  port: number;
  adminPort: number;
  /** Everything the group wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves when the leader exits (under npm the gateway's last lines may follow a moment later, through the same pipe). */
  exited: Promise<GatewayExit>;
  /** Resolves once every process of the group holding its output has exited: output() is then whole. */
  closed: Promise<void>;
}

/** Every group started and not yet seen exit: killGatewayGroups() ends them. */
const running = new Set<GatewayGroup['leader']>();

/**
 * Starts the gateway as `startedBy` does, with `groupEnvironment(env)`, in a process group led by the child; resolves once it is
 * ready (/readyz 200). A start that fails kills its group before throwing.
 */
export async function startGatewayGroup(startedBy: StartedBy, env: Record<string, string>): Promise<GatewayGroup> {
  const [command, args] = START[startedBy];
  const leader = spawn(command, [...args], { cwd: PROJECT_ROOT, env: groupEnvironment(env), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(leader);
  let output = '';
  leader.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  leader.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<GatewayExit>((resolveExit) =>
    leader.once('exit', (code, signal) => {
      running.delete(leader);
      resolveExit({ code, signal, at: performance.now() });
    }),
  );
  const closed = new Promise<void>((resolveClose) => leader.once('close', () => resolveClose()));
  const lineWith = (marker: string) => output.split('\n').find((line) => line.includes(marker));
  try {
    /** Whether the gateway has logged `marker` yet; throws once the leader has exited without it. */
    const logged = async (marker: string) => {
      if (lineWith(marker) !== undefined) return true;
      if (leader.exitCode !== null || leader.signalCode !== null) throw new Error(`the gateway exited before it was ready:\n${output}`);
      return false;
    };
    await waitFor(() => logged('"msg":"gateway listening"'), 20_000);
    const listening = JSON.parse(lineWith('"msg":"gateway listening"')!) as { port: number; adminPort: number };
    // Under npm the gateway names its own pid in a line of its own, written after it listens.
    if (startedBy === 'npm start') await waitFor(() => logged('"npmPid"'), 10_000);
    await waitUntilReady(listening);
    const gatewayPid = startedBy === 'npm start' ? (JSON.parse(lineWith('"npmPid"')!) as { pid: number }).pid : leader.pid!;
    return { startedBy, leader, gatewayPid, port: listening.port, adminPort: listening.adminPort, output: () => output, exited, closed };
  } catch (error) {
    await killGroup(leader);
    throw error;
  }
}

/** SIGKILL to the whole group of `leader` (npm and the gateway under it), once it is seen exit. */
async function killGroup(leader: ChildProcess): Promise<void> {
  if (leader.exitCode !== null || leader.signalCode !== null) {
    // The leader is gone; the gateway npm ran may outlive it for a moment.
    signalGroup(leader.pid!, 'SIGKILL');
    return;
  }
  const exited = new Promise<void>((resolveExit) => leader.once('exit', () => resolveExit()));
  signalGroup(leader.pid!, 'SIGKILL');
  await exited;
}

/** Sends `signal` to process group `pgid`; false when no process of it is left. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Kills every group started here that has not exited: after each test, and when a run stops half-way. */
export async function killGatewayGroups(): Promise<void> {
  await Promise.all([...running].map((leader) => killGroup(leader)));
}

/**
 * A copy of config/gateway.yaml with `overrides` laid over it (objects merged key by key), its interface document named by an
 * absolute path: for settings no environment variable sets (listen.maxConnections, listen.sendTimeoutMs...). remove() deletes it.
 */
export function gatewayConfigFile(overrides: Record<string, unknown>): { path: string; remove(): void } {
  const settings = parse(readFileSync(DEFAULT_CONFIG_FILE, 'utf8')) as Record<string, unknown> & { contract: string };
  const merged = merge({ ...settings, contract: resolve(dirname(DEFAULT_CONFIG_FILE), settings.contract) }, overrides);
  const dir = mkdtempSync(join(tmpdir(), 'gateway-config-'));
  const path = join(dir, 'gateway.yaml');
  writeFileSync(path, stringify(merged));
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const under = out[key];
    out[key] = isObject(under) && isObject(value) ? merge(under, value) : value;
  }
  return out;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
