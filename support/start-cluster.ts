// A private Redis Cluster on loopback, three primaries with `replicas` replicas each (none by default), created with redis-cli.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from './start-gateway-process.ts';
import { PortTaken, privateRedisArgs, waitForPing } from './start-redis.ts';
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

/**
 * One cluster node on a fresh client port and a fresh cluster bus port. The bus port is given (--cluster-port):
 * by default it is the client port + 10000, which for a fresh port (20000-32767) falls in the system's ephemeral
 * range, where any outgoing connection or port-0 server may hold it; the node then exits ("Failed listening on
 * port ... (cluster), aborting"). A pair that turns out taken between the pick and the bind is drawn again.
 */
async function launchNode(dir: string, children: ChildProcess[]): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const [port, busPort] = (await freshPorts(2)) as [number, number];
    const args = [...privateRedisArgs(port, dir), '--cluster-enabled', 'yes', '--cluster-port', String(busPort)];
    const child = spawn('redis-server', [...args, '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '2000'], {
      stdio: 'ignore',
    });
    children.push(child);
    try {
      await waitForPing(port, undefined, child);
      return port;
    } catch (error) {
      await killAll([child]);
      if (!(error instanceof PortTaken) || attempt === 5) throw error;
    }
  }
}

/** SIGKILLs each child still running and waits until it has exited. */
async function killAll(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children
      .filter((child) => child.exitCode === null && child.signalCode === null)
      .map((child) => {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        return exited;
      }),
  );
}

export async function startCluster(options: { replicas?: number } = {}): Promise<PrivateCluster> {
  const replicas = options.replicas ?? 0;
  const dir = mkdtempSync(join(tmpdir(), 'gateway-cluster-'));
  const children: ChildProcess[] = [];
  const stop = async () => {
    await killAll(children);
    rmSync(dir, { recursive: true, force: true });
  };
  const ports: number[] = [];
  // A set-up that fails leaves nothing running: the caller gets no handle to stop what did start.
  try {
    // One after another: two nodes launched at once could draw the same fresh port.
    for (let node = 0; node < 3 * (1 + replicas); node++) ports.push(await launchNode(dir, children));
    await run('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', String(replicas), '--cluster-yes']);
    await waitFor(
      async () => (await Promise.all(ports.map((port) => redisCli(port, 'cluster', 'info')))).every((info) => info.includes('cluster_state:ok')),
      15_000,
      100,
    );
    // Every replica knows its primary and has synced with it (link up): a failover then loses nothing.
    if (replicas > 0)
      await waitFor(
        async () => {
          const infos = await Promise.all(ports.map((port) => redisCli(port, 'info', 'replication')));
          const synced = infos.filter((info) => info.includes('role:slave') && info.includes('master_link_status:up'));
          return synced.length === 3 * replicas;
        },
        15_000,
        100,
      );
  } catch (error) {
    await stop();
    throw error;
  }
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
    stop,
  };
}
