// A private Redis Cluster on loopback, three primaries with `replicas` replicas each (none by default), created with redis-cli.
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
  /** Every node's port, primaries and replicas. */
  ports: readonly number[];
  /**
   * Promotes a replica of each primary, one at a time (CLUSTER FAILOVER on
   * the replica: the primary stops taking writes, the replica catches up and takes over), waiting until the cluster
   * is whole again. Only with replicas.
   */
  failOverEveryPrimary(): Promise<void>;
  stop(): Promise<void>;
}

const redisCli = (port: number, ...args: string[]) =>
  run('redis-cli', ['-p', String(port), ...args]).then(
    ({ stdout }) => stdout,
    () => '',
  );

/** The ports of the replicas, each with its primary's port, read from CLUSTER NODES. */
async function replicasOf(port: number): Promise<Array<{ replica: number; primary: number }>> {
  const lines = (await redisCli(port, 'cluster', 'nodes')).trim().split('\n');
  const byId = new Map(lines.map((line) => line.split(' ')).map((fields) => [fields[0]!, fields]));
  const portOf = (fields: string[]) => Number(/:(\d+)@/.exec(fields[1]!)![1]);
  return [...byId.values()]
    .filter((fields) => fields[2]!.includes('slave') && !fields[2]!.includes('fail'))
    .map((fields) => ({ replica: portOf(fields), primary: portOf(byId.get(fields[3]!)!) }));
}

export async function startCluster(options: { replicas?: number } = {}): Promise<PrivateCluster> {
  const replicas = options.replicas ?? 0;
  const dir = mkdtempSync(join(tmpdir(), 'gateway-cluster-'));
  const ports = await freshPorts(3 * (1 + replicas));
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
  await run('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', String(replicas), '--cluster-yes']);
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
  // Every replica has synced with its primary: a failover then loses nothing.
  if (replicas > 0)
    await waitFor(
      async () => (await Promise.all(ports.map((port) => redisCli(port, 'info', 'replication')))).every((info) => !info.includes('master_link_status:down')),
      15_000,
      100,
    );
  return {
    nodes: ports.map((port) => `127.0.0.1:${port}`).join(','),
    ports,
    async failOverEveryPrimary() {
      const pairs = await replicasOf(ports[0]!);
      const promoted = new Set<number>();
      for (const { replica, primary } of pairs) {
        if (promoted.has(primary)) continue;
        promoted.add(replica);
        const answer = (await redisCli(replica, 'cluster', 'failover')).trim();
        if (answer !== 'OK') throw new Error(`CLUSTER FAILOVER on ${replica}: ${answer}`);
        await waitFor(async () => (await redisCli(replica, 'role')).startsWith('master'), 15_000, 50);
        await waitFor(
          async () => (await Promise.all(ports.map((port) => redisCli(port, 'cluster', 'info')))).every((info) => info.includes('cluster_state:ok')),
          15_000,
          50,
        );
      }
    },
    async stop() {
      for (const child of children) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
