// A private three-node Redis Cluster on loopback (no replicas), created with redis-cli.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from './start-gateway-process.ts';
import { privateRedisArgs } from './start-redis.ts';
import { freshPorts } from './start-upstream.ts';

const run = promisify(execFile);

export interface PrivateCluster {
  /** REDIS_CLUSTER_NODES for the gateway. */
  nodes: string;
  stop(): Promise<void>;
}

export async function startCluster(): Promise<PrivateCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-cluster-'));
  const ports = await freshPorts(3);
  const children: ChildProcess[] = ports.map((port) =>
    spawn(
      'redis-server',
      [...privateRedisArgs(port, dir), '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '2000'],
      { stdio: 'ignore' },
    ),
  );
  for (const port of ports) {
    await waitFor(
      async () =>
        (await run('redis-cli', ['-p', String(port), 'ping']).then(
          ({ stdout }) => stdout.trim(),
          () => '',
        )) === 'PONG',
      5000,
      50,
    );
  }
  await run('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes']);
  await waitFor(
    async () => {
      const states = await Promise.all(
        ports.map((port) =>
          run('redis-cli', ['-p', String(port), 'cluster', 'info']).then(
            ({ stdout }) => stdout,
            () => '',
          ),
        ),
      );
      return states.every((info) => info.includes('cluster_state:ok'));
    },
    15_000,
    100,
  );
  return {
    nodes: ports.map((port) => `127.0.0.1:${port}`).join(','),
    async stop() {
      for (const child of children) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
