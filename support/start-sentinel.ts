// A private Sentinel setup on loopback: a primary, a replica and three sentinels, each on a free port.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { waitFor } from './start-gateway-process.ts';
import { privateRedisArgs } from './start-redis.ts';
import { freshPorts } from './start-upstream.ts';

export interface PrivateSentinels {
  primaryPort: number;
  replicaPort: number;
  sentinelPorts: number[];
  /** REDIS_SENTINELS for the gateway. */
  sentinels: string;
  name: string;
  /** Kills the current primary (SIGKILL, as a crash would). */
  killPrimary(): Promise<void>;
  /** The port Sentinel currently names as primary. */
  currentPrimaryPort(): Promise<number>;
  stop(): Promise<void>;
}

const NAME = 'mymaster';

/**
 * Starts the set-up, once more if it does not come up: a free port picked here can be taken by another
 * test file's server before redis-server binds it, and then a sentinel is missing for good.
 */
export async function startSentinels(): Promise<PrivateSentinels> {
  try {
    return await startSentinelsOnce();
  } catch {
    return startSentinelsOnce();
  }
}

async function startSentinelsOnce(): Promise<PrivateSentinels> {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-sentinel-'));
  const children: ChildProcess[] = [];
  const run = (command: string, args: string[]) => {
    const child = spawn(command, args, { stdio: 'ignore' });
    children.push(child);
    return child;
  };
  const server = (port: number, extra: string[] = []) => run('redis-server', [...privateRedisArgs(port, dir), '--repl-diskless-sync-delay', '0', ...extra]);

  // Five servers on five different ports.
  const [primaryPort, replicaPort, ...sentinelPortList] = (await freshPorts(5)) as [number, number, ...number[]];
  const primary = server(primaryPort);
  server(replicaPort, ['--replicaof', '127.0.0.1', String(primaryPort)]);
  const sentinelPorts: number[] = [];
  for (let i = 0; i < 3; i++) {
    const port = sentinelPortList[i]!;
    sentinelPorts.push(port);
    const file = join(dir, `sentinel-${port}.conf`);
    writeFileSync(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${NAME} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${NAME} 1000`,
        `sentinel failover-timeout ${NAME} 5000`,
        '',
      ].join('\n'),
    );
    run('redis-sentinel', [file]);
  }

  const sentinelClients = sentinelPorts.map((port) => {
    const client = new Redis({ port, host: '127.0.0.1', retryStrategy: () => 50, maxRetriesPerRequest: null });
    client.on('error', () => {});
    return client;
  });
  const sentinel = sentinelClients[0]!;
  const disconnectAll = () => {
    for (const client of sentinelClients) client.disconnect();
  };
  // Ready when every sentinel sees the replica and its peers. Any of them can be elected to lead the failover,
  // and a leader that does not yet know the replica aborts it and waits twice the failover timeout before the
  // next attempt. Sentinel learns of replicas from the primary's INFO, asked every 10 s: on a loaded machine a
  // first miss costs that much. The deadline only detects a setup that will never come up.
  try {
    await waitFor(
      async () => {
        for (const client of sentinelClients) {
          const replicas = (await client.call('SENTINEL', 'REPLICAS', NAME).catch(() => [])) as unknown[];
          const peers = (await client.call('SENTINEL', 'SENTINELS', NAME).catch(() => [])) as unknown[];
          if (replicas.length !== 1 || peers.length !== 2) return false;
        }
        return true;
      },
      45_000,
      100,
    );
  } catch (error) {
    disconnectAll();
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  return {
    primaryPort,
    replicaPort,
    sentinelPorts,
    sentinels: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','),
    name: NAME,
    async killPrimary() {
      const exited = new Promise((resolve) => primary.once('exit', resolve));
      primary.kill('SIGKILL');
      await exited;
    },
    async currentPrimaryPort() {
      const [, port] = (await sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', NAME)) as [string, string];
      return Number(port);
    },
    async stop() {
      disconnectAll();
      for (const child of children) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
