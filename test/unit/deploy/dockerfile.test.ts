// deploy/Dockerfile: the gateway starts from exactly the files its COPY lines take (the build stage's dist/ among them), with production dependencies only, as its non-root USER, on its Node release.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { refusedPort } from '../../../support/start-upstream.ts';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import packageJson from '../../../package.json' with { type: 'json' };
import { PROJECT_ROOT, START_ARGS, waitFor } from '../../../support/start-gateway-process.ts';
import { readDockerfile, type Stage } from './dockerfile.ts';

/** The Node 24 the tests run on (the `node` dev dependency): the image's Node must be the same release. */
const NODE = join(PROJECT_ROOT, 'node_modules/.bin/node');

const dockerfile = readDockerfile();
const image = dockerfile.at(-1)!;
const builders = dockerfile.slice(0, -1);
const all = (keyword: string, stage: Stage = image) => stage.instructions.filter((instruction) => instruction.keyword === keyword);
const one = (keyword: string, stage: Stage = image) => {
  const found = all(keyword, stage);
  if (found.length !== 1) throw new Error(`deploy/Dockerfile should have one ${keyword} in ${stage.name ?? 'the image'}, has ${found.length}`);
  return found[0]!.args;
};

interface Copy {
  /** The stage the files come from (`--from=`), or undefined for the build context (the repository root). */
  from: string | undefined;
  sources: string[];
  destination: string;
}

/** A COPY line's sources (in the build context, or absolute in the `--from` stage) and destination. */
function parseCopy(args: string): Copy {
  const from = /^--from=(\S+)\s+/.exec(args);
  const rest = from ? args.slice(from[0].length) : args;
  if (rest.startsWith('--') || rest.startsWith('[')) throw new Error(`COPY ${args}: flags other than --from and the JSON form are not understood by this test`);
  const parts = rest.split(/\s+/);
  return { from: from?.[1], sources: parts.slice(0, -1), destination: parts.at(-1)! };
}

const copies = (stage: Stage): Copy[] => all('COPY', stage).map(({ args }) => parseCopy(args));

/** Puts one COPY line's files into the stage's working directory, as Docker copies them. */
function copyInto(workdir: string, { from, sources, destination }: Copy, stageRoots: Map<string, string>): void {
  const sourceRoot = from === undefined ? PROJECT_ROOT : stageRoots.get(from);
  if (sourceRoot === undefined) throw new Error(`COPY --from=${from}: no earlier stage of that name`);
  for (const source of sources) {
    // A directory's contents go to the destination; a file goes into it when it ends in '/'.
    const path = join(sourceRoot, source);
    const into = destination.endsWith('/') && !statSync(path).isDirectory();
    cpSync(path, into ? join(workdir, destination, basename(path)) : join(workdir, destination), { recursive: true });
  }
}

/** This Node first on PATH, for the RUN lines' commands. */
const RUN_PATH = `${dirname(realpathSync(NODE))}:/usr/bin:/bin`;

/**
 * Makes a stage's filesystem under `root` as Docker would: its instructions in file order. A RUN line's
 * `npm ci` goes to `install`; `npm cache clean` is skipped (it would empty this machine's cache); other
 * commands run as written, with this Node. ENV applies to the RUN lines after it. Returns the stage's
 * working directory and environment.
 */
function buildStage(
  stage: Stage,
  root: string,
  stageRoots: Map<string, string>,
  install: (argv: string[], workdir: string, env: Record<string, string>) => void,
): { workdir: string; env: Record<string, string> } {
  let workdir = root;
  const env: Record<string, string> = {};
  for (const { keyword, args } of stage.instructions) {
    if (keyword === 'WORKDIR') {
      workdir = join(root, args);
      mkdirSync(workdir, { recursive: true });
    } else if (keyword === 'COPY') copyInto(workdir, parseCopy(args), stageRoots);
    else if (keyword === 'ENV') Object.assign(env, Object.fromEntries([args.split('=', 2) as [string, string]]));
    else if (keyword === 'RUN') {
      for (const command of args.split('&&').map((part) => part.trim())) {
        const argv = command.split(/\s+/);
        if (argv[0] === 'npm' && argv[1] === 'ci') install(argv, workdir, env);
        else if (argv[0] === 'npm' && argv[1] === 'cache') continue;
        else execFileSync('/bin/sh', ['-c', command], { cwd: workdir, stdio: 'pipe', env: { ...env, PATH: RUN_PATH } });
      }
    } else if (!['USER', 'EXPOSE', 'CMD', 'LABEL'].includes(keyword)) throw new Error(`${keyword} ${args}: not understood by this test`);
  }
  return { workdir, env };
}

/** A build stage's `npm ci` flags under which this project's node_modules (same lockfile) is what it installs. */
const BUILDER_INSTALL_FLAGS = new Set(['--ignore-scripts', '--no-audit', '--no-fund']);

/** The image's user: numeric, so the kubelet can check runAsNonRoot, and not root. */
function imageUser(): { uid: number; gid: number } {
  const match = /^(\d+):(\d+)$/.exec(one('USER'));
  if (!match) throw new Error(`USER ${one('USER')} should be numeric uid:gid`);
  return { uid: Number(match[1]), gid: Number(match[2]) };
}

describe('deploy/Dockerfile', () => {
  it('builds on a pinned Node image of the release the tests run on, in every stage', () => {
    const testedNode = execFileSync(NODE, ['--version'], { encoding: 'utf8' }).trim();
    expect(testedNode).toMatch(/^v24\./);
    for (const { base } of dockerfile) {
      const match = /^node:(\d+\.\d+\.\d+)-[a-z]+-slim(@sha256:[0-9a-f]{64})?$/.exec(base);
      expect(match, `FROM ${base}: expected node:<version>-<debian>-slim, optionally @sha256:<digest>`).not.toBeNull();
      expect(`v${match![1]}`).toBe(testedNode);
    }
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
    const fromContext = dockerfile
      .flatMap(copies)
      .filter((copy) => copy.from === undefined)
      .flatMap((copy) => copy.sources);
    expect(ignore.slice(1).sort()).toEqual([...new Set(fromContext)].map((source) => `!${source}`).sort());
  });

  describe("the image's files", () => {
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
      chmodSync(root, 0o755); // mkdtemp's 0700 would keep the image's user out
      // The build stages first, each in a filesystem of its own. Their `npm ci` (every dependency, as
      // locked) is this project's node_modules, which `npm ci` installed from the same lockfile: so
      // only flags that change nothing about what it installs, and no ENV before it.
      const stageRoots = new Map<string, string>();
      for (const stage of builders) {
        const stageRoot = join(root, `stage-${stage.name}`);
        buildStage(stage, stageRoot, stageRoots, (argv, workdir, env) => {
          expect(env, "ENV before a build stage's npm ci (NODE_ENV=production would leave out the compiler)").toEqual({});
          for (const flag of argv.slice(2)) expect(BUILDER_INSTALL_FLAGS, `npm ci ${flag} in a build stage`).toContain(flag);
          symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(workdir, 'node_modules'));
        });
        if (stage.name !== undefined) stageRoots.set(stage.name, stageRoot);
      }

      // The image's root filesystem, from the build context and the build stages. Its `npm ci` reads the
      // lockfile exactly as in the image; --prefer-offline takes cached tarballs.
      const { workdir, env } = buildStage(image, join(root, 'image'), stageRoots, (argv, workdir, env) => {
        expect(argv.slice(0, 3)).toEqual(['npm', 'ci', '--omit=dev']);
        execFileSync('npm', [...argv.slice(1), '--prefer-offline'], {
          cwd: workdir,
          stdio: 'pipe',
          env: { ...process.env, ...env, PATH: `${join(PROJECT_ROOT, 'node_modules/.bin')}:${process.env.PATH}` },
        });
      });
      expect(existsSync(join(workdir, 'node_modules/vitest'))).toBe(false);

      // Started as the image would be: its ENV, its CMD with this Node, its USER (switching to it with
      // setpriv when the test runs as root). Redis is unreachable: alive, not ready.
      const { uid, gid } = imageUser();
      const [, ...args] = JSON.parse(one('CMD')) as string[];
      const asImageUser: string[] = [];
      if (process.getuid!() === 0) {
        const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));
        if (!setpriv) throw new Error("the test runs as root and needs setpriv (util-linux) to start the gateway as the image's user");
        asImageUser.push(setpriv, `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--');
      }
      const command = [...asImageUser, NODE, ...args];
      gateway = spawn(command[0]!, command.slice(1), {
        cwd: workdir,
        env: {
          ...env,
          PATH: '/usr/bin:/bin',
          PORT: '0',
          ADMIN_PORT: '0',
          REDIS_URL: `redis://127.0.0.1:${await refusedPort()}`,
          // As the manifests set it: with the image's NODE_ENV=production, an unset environment stops start-up.
          GATEWAY_ENVIRONMENT: 'staging',
          LOG_LEVEL: 'info',
          SHUTDOWN_DRAIN_DELAY_MS: '0',
        },
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

      // The operators' CLIs run from the image too (the README's `kubectl exec … node src/cli/keys.ts create …`), as TypeScript.
      for (const cli of [packageJson.scripts.keys, packageJson.scripts.deprecations]) {
        const [node, ...cliArgs] = cli.split(' ');
        expect(node).toBe('node');
        const cliCommand = [...asImageUser, NODE, ...cliArgs, '--help'];
        expect(execFileSync(cliCommand[0]!, cliCommand.slice(1), { cwd: workdir, encoding: 'utf8', env: { ...env, PATH: '/usr/bin:/bin' } })).toMatch(
          /^Usage: /,
        );
      }
    });
  });
});
