// What an operator reads when the gateway, the demo or the sample backend cannot start: one line naming the setting, exit 1, no stack.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTokenFile, tokenFile } from '../helpers/admin-api.ts';
import { createTestPki } from '../helpers/test-certificates.ts';
import { PROJECT_ROOT, START_ARGS, startGatewayProcess, waitFor } from '../../support/start-gateway-process.ts';

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs node with `args` in the project, with only `env` (and PATH) set, until it exits. */
function run(args: readonly string[], env: Record<string, string>): Promise<Exit> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...args], { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

/** npm start, as the image runs it; Redis is not needed to get as far as listening. */
const npmStart = (env: Record<string, string>) => run(START_ARGS, { REDIS_URL: 'redis://127.0.0.1:1', SHUTDOWN_DRAIN_DELAY_MS: '0', ...env });

/** A server holding a port on `host`, as another process would. */
async function occupy(host: string): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe('a port in use', () => {
  const held: Server[] = [];
  let publicPort: number;
  let adminPort: number;
  beforeAll(async () => {
    const onAll = await occupy('0.0.0.0');
    const onLoopback = await occupy('127.0.0.1');
    held.push(onAll.server, onLoopback.server);
    publicPort = onAll.port;
    adminPort = onLoopback.port;
  });
  afterAll(() => {
    for (const server of held) server.close();
  });

  it('npm start names PORT and the address', async () => {
    const result = await npmStart({ PORT: String(publicPort), ADMIN_PORT: '0' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `petstore-gateway: could not start: PORT (listen.port): 0.0.0.0:${publicPort} is already in use (another process listens there)\n`,
    );
  });

  it('npm start names ADMIN_PORT and the address', async () => {
    const result = await npmStart({ PORT: '0', ADMIN_PORT: String(adminPort) });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `petstore-gateway: could not start: ADMIN_PORT (listen.adminPort): 127.0.0.1:${adminPort} is already in use (another process listens there)\n`,
    );
  });

  it('npm start names ADMIN_HOST, not the port, for an address this machine does not have', async () => {
    const result = await npmStart({ PORT: '0', ADMIN_PORT: '0', ADMIN_HOST: '192.0.2.1' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('petstore-gateway: could not start: ADMIN_HOST (listen.adminHost): 192.0.2.1:0 is not an address of this machine\n');
  });

  it('npm run demo names DEMO_BACKEND_PORT', async () => {
    const result = await run(['src/demo/launch.ts'], { DEMO_BACKEND_PORT: String(adminPort) });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`demo: could not start: DEMO_BACKEND_PORT: 127.0.0.1:${adminPort} is already in use (another process listens there)\n`);
  });

  it("npm run demo names the gateway's PORT", async () => {
    const result = await run(['src/demo/launch.ts'], { DEMO_BACKEND_PORT: '0', PORT: String(publicPort), ADMIN_PORT: '0', LOG_LEVEL: 'silent' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`demo: could not start: PORT (listen.port): 0.0.0.0:${publicPort} is already in use (another process listens there)\n`);
  });

  it('npm run backend names PORT', async () => {
    const result = await run(['src/demo/backend.ts'], { PORT: String(adminPort) });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`backend: could not start: PORT: 127.0.0.1:${adminPort} is already in use (another process listens there)\n`);
  });
});

describe('Redis unreachable at start', () => {
  it('is one line naming REDIS_URL, without its password or a stack', async () => {
    const gateway = await startGatewayProcess({ REDIS_URL: 'redis://:a-redis-password@127.0.0.1:1' });
    try {
      await waitFor(async () => gateway.output().includes('Redis cannot be reached'));
      const lines = gateway
        .output()
        .split('\n')
        .filter((line) => line.includes('redis'));
      expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual([
        'Redis cannot be reached at REDIS_URL (redis.url) redis://:***@127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1; the gateway is not ready until it can, and keeps trying',
      ]);
      expect(gateway.output()).not.toContain('a-redis-password');
      expect(gateway.output()).not.toContain('"stack"');
    } finally {
      await gateway.stop();
    }
  });

  it('names the Sentinel settings when Sentinel mode cannot reach its sentinels', async () => {
    const gateway = await startGatewayProcess({ REDIS_SENTINELS: '127.0.0.1:1', REDIS_SENTINEL_NAME: 'primary' });
    try {
      await waitFor(async () => gateway.output().includes('Redis cannot be reached'));
      expect(gateway.output()).toContain(
        '"msg":"Redis cannot be reached at REDIS_SENTINELS (redis.sentinels) 127.0.0.1:1, primary REDIS_SENTINEL_NAME primary: ',
      );
    } finally {
      await gateway.stop();
    }
  });
});

describe('a bad setting', () => {
  it('says what PORT must be, without blaming gateway.yaml', async () => {
    const result = await npmStart({ PORT: '80a' });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'petstore-gateway: could not start: invalid environment variable PORT (listen.port): must be an integer port number (0 to 65535)\n',
    );
  });

  it('names API_KEY_PEPPER_FILE when the pepper file is missing', async () => {
    const result = await npmStart({ PORT: '0', ADMIN_PORT: '0', API_KEY_PEPPER_FILE: '/nonexistent/pepper' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^petstore-gateway: could not start: API_KEY_PEPPER_FILE \(auth\.pepperFile\): \/nonexistent\/pepper could not be read: ENOENT[^\n]*\n$/,
    );
  });

  it('names ADMIN_API_TOKEN_FILE when an admin token is too short', async () => {
    const file = tokenFile('a'.repeat(40), 'short-token');
    try {
      const result = await npmStart({ PORT: '0', ADMIN_PORT: '0', ADMIN_API_TOKEN_FILE: file });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        'petstore-gateway: could not start: ADMIN_API_TOKEN_FILE (adminApi.tokenFile): the token on line 2 is shorter than 32 characters\n',
      );
    } finally {
      removeTokenFile(file);
    }
  });

  it('names every fault npm run config -- validate names, one a line', async () => {
    const file = tokenFile('short-token');
    try {
      const result = await npmStart({ PORT: '0', ADMIN_PORT: '0', ADMIN_API_TOKEN_FILE: file, API_KEY_PEPPER_FILE: '/nonexistent/pepper' });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        /^petstore-gateway: could not start: ADMIN_API_TOKEN_FILE \(adminApi\.tokenFile\): the token on line 1 is shorter than 32 characters\nAPI_KEY_PEPPER_FILE \(auth\.pepperFile\): \/nonexistent\/pepper could not be read: ENOENT[^\n]*\n$/,
      );
    } finally {
      removeTokenFile(file);
    }
  });

  it("names TLS_KEY_FILE when the listener's key is not its certificate's, without quoting the key", async () => {
    const pki = createTestPki();
    try {
      const authority = pki.authority('ca');
      const listener = authority.issue({ name: 'listener' });
      const stranger = authority.issue({ name: 'stranger' });
      const result = await npmStart({ PORT: '0', ADMIN_PORT: '0', TLS_CERT_FILE: listener.certFile, TLS_KEY_FILE: stranger.keyFile });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `petstore-gateway: could not start: TLS_KEY_FILE (listen.tls.keyFile): the key in ${stranger.keyFile} is not the key of the certificate in ${listener.certFile}\n`,
      );
    } finally {
      pki.remove();
    }
  });

  describe('a missing interface document', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gateway-config-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('is one line naming the contract key and the file', async () => {
      // The shipped configuration, in a directory without the document it names.
      copyFileSync(join(PROJECT_ROOT, 'config/gateway.yaml'), join(dir, 'gateway.yaml'));
      const result = await npmStart({ PORT: '0', ADMIN_PORT: '0', GATEWAY_CONFIG: join(dir, 'gateway.yaml') });
      expect(result.code).toBe(1);
      const missing = join(dir, 'petstore.openapi.yaml');
      expect(result.stderr).toMatch(/^petstore-gateway: could not start: config: contract: interface document (\S+) could not be read: ENOENT[^\n]*\n$/);
      expect(result.stderr).toContain(`interface document ${missing} could not be read`);
    });
  });
});

/** An IPv4 address of this machine other than loopback, if it has one. */
const outsideAddress = Object.values(networkInterfaces())
  .flat()
  .find((address) => address !== undefined && address.family === 'IPv4' && !address.internal)?.address;

describe('the admin listener', () => {
  it('binds loopback unless ADMIN_HOST says otherwise', async () => {
    const gateway = await startGatewayProcess({ REDIS_URL: 'redis://127.0.0.1:1' });
    try {
      const listening = JSON.parse(
        gateway
          .output()
          .split('\n')
          .find((line) => line.includes('"gateway listening"'))!,
      ) as Record<string, unknown>;
      expect(listening).toMatchObject({ host: '0.0.0.0', adminHost: '127.0.0.1' });
      expect((await fetch(`http://127.0.0.1:${gateway.adminPort}/healthz`)).status).toBe(200);
      if (outsideAddress) await expect(fetch(`http://${outsideAddress}:${gateway.adminPort}/healthz`)).rejects.toThrow();
    } finally {
      await gateway.stop();
    }
  });

  it.runIf(outsideAddress)('listens where ADMIN_HOST says', async () => {
    const gateway = await startGatewayProcess({ REDIS_URL: 'redis://127.0.0.1:1', ADMIN_HOST: '0.0.0.0' });
    try {
      expect((await fetch(`http://${outsideAddress}:${gateway.adminPort}/healthz`)).status).toBe(200);
    } finally {
      await gateway.stop();
    }
  });
});
