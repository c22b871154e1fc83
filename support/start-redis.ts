// A private redis-server for one test file: its own free port and temp dir, stopped by PID. Never a shared Redis.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createRedisClient, type RedisClient } from '../src/redis/connect.ts';
import { scaled } from './time-scale.ts';
import { freshPorts } from './start-upstream.ts';

export interface PrivateRedis {
  port: number;
  url: string;
  /** A plain client for assertions; closed by stop(). */
  client: Redis;
  /** Kills the server (SIGKILL: as a crash would). */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A private redis-server's arguments: loopback only, on `port`, nothing written to disk but into `dir`
 * (a cluster's node file). Tests, the bench and the soak start every server with these.
 */
export function privateRedisArgs(port: number, dir: string): string[] {
  return ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
}

/** Resolves once the server on `port` answers PING; throws PortTaken as soon as `child` has exited. */
export async function waitForPing(port: number, password: string | undefined, child?: ChildProcess, deadlineMs = 5000): Promise<void> {
  const deadline = Date.now() + scaled(deadlineMs);
  while (Date.now() < deadline) {
    // Exited: the port was taken between the pick and its bind (the caller tries another).
    if (child && (child.exitCode !== null || child.signalCode !== null)) throw new PortTaken(port);
    const probe = new Redis({ port, host: '127.0.0.1', password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') return;
    } catch {
      /* not up yet */
    } finally {
      probe.disconnect();
    }
    await sleep(20);
  }
  throw new Error(`redis-server on port ${port} did not answer PING`);
}

function launch(port: number, dir: string, password: string | undefined, env: NodeJS.ProcessEnv | undefined): ChildProcess {
  const child = spawn('redis-server', [...privateRedisArgs(port, dir), '--logfile', '', ...(password ? ['--requirepass', password] : [])], {
    stdio: 'ignore',
    ...(env ? { env: { ...process.env, ...env } } : {}),
  });
  child.on('error', (error) => {
    throw new Error(`could not start redis-server (is it installed?): ${error.message}`);
  });
  return child;
}

export class PortTaken extends Error {
  constructor(port: number) {
    super(`redis-server could not listen on port ${port}`);
  }
}

/** Launches on a fresh port, and on another while the one drawn turns out taken (redis-server cannot listen on port 0). */
async function launchOnFreshPort(
  dir: string,
  password: string | undefined,
  env: NodeJS.ProcessEnv | undefined,
): Promise<{ port: number; child: ChildProcess }> {
  for (let attempt = 1; ; attempt++) {
    const [port] = (await freshPorts(1)) as [number];
    const child = launch(port, dir, password, env);
    try {
      await waitForPing(port, password, child);
      return { port, child };
    } catch (error) {
      child.kill('SIGKILL');
      if (!(error instanceof PortTaken) || attempt === 5) throw error;
    }
  }
}

/** With a password, the server requires it (AUTH) and `url` carries it; `env` is added to the server's environment. */
export async function startRedis(options: { password?: string; env?: NodeJS.ProcessEnv } = {}): Promise<PrivateRedis> {
  const { password, env } = options;
  const dir = mkdtempSync(join(tmpdir(), 'gateway-redis-'));
  const launched = await launchOnFreshPort(dir, password, env);
  const { port } = launched;
  let child = launched.child;
  const client = new Redis({ port, host: '127.0.0.1', password, maxRetriesPerRequest: 1 });
  client.on('error', () => {});

  async function kill(): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  return {
    port,
    url: password ? `redis://:${encodeURIComponent(password)}@127.0.0.1:${port}` : `redis://127.0.0.1:${port}`,
    client,
    kill,
    async restart() {
      await kill();
      child = launch(port, dir, password, env);
      await waitForPing(port, password);
    },
    async stop() {
      client.disconnect();
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A client as the gateway's request path makes it (commands fail at once while disconnected), resolved once ready. */
export async function requestPathClient(url: string, name: string): Promise<RedisClient> {
  const client = createRedisClient(
    { url, sentinels: [], sentinelName: 'mymaster', clusterNodes: [], password: null, commandTimeoutMs: 500, connectTimeoutMs: 500 },
    { role: 'request-path', name },
  );
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client;
}
