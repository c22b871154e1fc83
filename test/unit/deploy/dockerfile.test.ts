// deploy/Dockerfile: the gateway starts from exactly the files its COPY lines take, with production dependencies only, as its non-root USER, on its Node release.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT, START_ARGS, waitFor } from '../../helpers/start-gateway-process.ts';

/** The Node 24 the tests run on (the `node` dev dependency): the image's Node must be the same release. */
const NODE = join(PROJECT_ROOT, 'node_modules/.bin/node');

interface Instruction {
  keyword: string;
  args: string;
}

/** Dockerfile instructions, with comments dropped and continued lines joined. */
function instructions(text: string): Instruction[] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ');
  return logical
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [, keyword, args] = /^\s*(\S+)\s+(.*)$/.exec(line)!;
      return { keyword: keyword!.toUpperCase(), args: args!.trim() };
    });
}

const dockerfile = instructions(readFileSync(join(PROJECT_ROOT, 'deploy/Dockerfile'), 'utf8'));
const all = (keyword: string) => dockerfile.filter((instruction) => instruction.keyword === keyword);
const one = (keyword: string) => {
  const found = all(keyword);
  if (found.length !== 1) throw new Error(`deploy/Dockerfile should have one ${keyword}, has ${found.length}`);
  return found[0]!.args;
};

/** Each COPY line's sources (paths in the build context, the repository root) and destination in the image. */
const copies = all('COPY').map(({ args }) => {
  if (args.startsWith('--') || args.startsWith('[')) throw new Error(`COPY ${args}: flags and the JSON form are not understood by this test`);
  const parts = args.split(/\s+/);
  return { sources: parts.slice(0, -1), destination: parts.at(-1)! };
});

/** The image's user: numeric, so the kubelet can check runAsNonRoot, and not root. */
function imageUser(): { uid: number; gid: number } {
  const match = /^(\d+):(\d+)$/.exec(one('USER'));
  if (!match) throw new Error(`USER ${one('USER')} should be numeric uid:gid`);
  return { uid: Number(match[1]), gid: Number(match[2]) };
}

describe('deploy/Dockerfile', () => {
  it('builds on a pinned Node image of the release the tests run on', () => {
    const from = one('FROM');
    const match = /^node:(\d+\.\d+\.\d+)-[a-z]+-slim(@sha256:[0-9a-f]{64})?$/.exec(from);
    expect(match, `FROM ${from}: expected node:<version>-<debian>-slim, optionally @sha256:<digest>`).not.toBeNull();
    const testedNode = execFileSync(NODE, ['--version'], { encoding: 'utf8' }).trim();
    expect(`v${match![1]}`).toBe(testedNode);
    expect(testedNode).toMatch(/^v24\./);
  });

  it('runs as a non-root user, and node directly, so SIGTERM reaches the gateway', () => {
    expect(imageUser().uid).toBeGreaterThan(0);
    // Exactly as `npm start` runs it, V8 flags included.
    expect(JSON.parse(one('CMD'))).toEqual(['node', ...START_ARGS]);
  });

  it('sends the builder only what the COPY lines take (Dockerfile.dockerignore)', () => {
    const ignore = readFileSync(join(PROJECT_ROOT, 'deploy/Dockerfile.dockerignore'), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('#'));
    expect(ignore[0]).toBe('*');
    expect(ignore.slice(1).sort()).toEqual(copies.flatMap((copy) => copy.sources).map((source) => `!${source}`).sort());
  });

  describe('the image\'s files', () => {
    const root = mkdtempSync(join(tmpdir(), 'image-'));
    let gateway: ChildProcess | undefined;
    afterAll(async () => {
      if (gateway && gateway.exitCode === null) {
        const exited = new Promise((resolve) => gateway!.once('exit', resolve));
        gateway.kill('SIGTERM');
        await exited;
      }
      rmSync(root, { recursive: true, force: true });
    });

    it('start the gateway with production dependencies only, and /healthz answers on the admin port', { timeout: 120_000 }, async () => {
      // The image's root filesystem: WORKDIR, the COPY lines' files, then the RUN line's `npm ci`.
      chmodSync(root, 0o755);
      const workdir = join(root, one('WORKDIR'));
      mkdirSync(workdir, { recursive: true });
      for (const { sources, destination } of copies) {
        for (const source of sources) {
          const target = destination.endsWith('/') ? join(workdir, destination, source) : join(workdir, destination);
          cpSync(join(PROJECT_ROOT, source), target, { recursive: true });
        }
      }
      // Only the `npm ci` of the RUN line: `npm cache clean` would empty this machine's cache. The
      // install reads the lockfile exactly as in the image; --prefer-offline takes cached tarballs.
      const install = one('RUN').split('&&')[0]!.trim().split(/\s+/);
      expect(install.slice(0, 3)).toEqual(['npm', 'ci', '--omit=dev']);
      execFileSync('npm', [...install.slice(1), '--prefer-offline'], { cwd: workdir, stdio: 'pipe', env: { ...process.env, PATH: `${join(PROJECT_ROOT, 'node_modules/.bin')}:${process.env.PATH}` } });
      expect(existsSync(join(workdir, 'node_modules/vitest'))).toBe(false);

      // Started as the image would be: its ENV, its CMD with this Node, its USER (switching to it with
      // setpriv when the test runs as root). Redis is unreachable: alive, not ready.
      const env: Record<string, string> = Object.fromEntries(all('ENV').map(({ args }) => args.split('=', 2) as [string, string]));
      const { uid, gid } = imageUser();
      const [, ...args] = JSON.parse(one('CMD')) as string[];
      const command = [NODE, ...args];
      if (process.getuid!() === 0) {
        const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));
        if (!setpriv) throw new Error('the test runs as root and needs setpriv (util-linux) to start the gateway as the image\'s user');
        command.unshift(setpriv, `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--');
      }
      gateway = spawn(command[0]!, command.slice(1), {
        cwd: workdir,
        env: { ...env, PATH: '/usr/bin:/bin', PORT: '0', ADMIN_PORT: '0', REDIS_URL: `redis://127.0.0.1:${await closedPort()}`, LOG_LEVEL: 'info', SHUTDOWN_DRAIN_DELAY_MS: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      gateway.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      gateway.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      const listening = () => output.split('\n').find((line) => line.includes('"gateway listening"'));
      await waitFor(async () => {
        if (gateway!.exitCode !== null) throw new Error(`the gateway exited with ${gateway!.exitCode}:\n${output}`);
        return listening() !== undefined;
      }, 20_000);
      const { adminPort } = JSON.parse(listening()!) as { adminPort: number };

      const health = await fetch(`http://127.0.0.1:${adminPort}/healthz`);
      expect(health.status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status).toBe(503);
      const status = readFileSync(`/proc/${gateway.pid}/status`, 'utf8');
      const effectiveUid = Number(/^Uid:\s+\d+\s+(\d+)/m.exec(status)![1]);
      expect(effectiveUid).toBe(process.getuid!() === 0 ? uid : process.getuid!());
      expect(effectiveUid).toBeGreaterThan(0);
    });
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
