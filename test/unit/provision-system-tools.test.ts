// npm test's first step: installs the system tools the tests start, or stops at once with the command to run.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../helpers/start-gateway-process.ts';
import { installCommand, planProvisioning } from '../provision-system-tools.ts';

const ALL_PACKAGES = 'prometheus redis-sentinel redis-server redis-tools';

describe('planProvisioning', () => {
  it('does nothing when every tool is on PATH', () => {
    expect(planProvisioning({ missing: [], isRoot: false, hasAptGet: false })).toEqual({ action: 'none' });
  });

  it('installs the packages of the missing tools, once each, as root with apt-get', () => {
    expect(planProvisioning({ missing: ['redis-sentinel', 'prometheus', 'promtool'], isRoot: true, hasAptGet: true })).toEqual({
      action: 'install',
      packages: ['prometheus', 'redis-sentinel'],
    });
  });

  it('maps redis-cli to the redis-tools package', () => {
    expect(planProvisioning({ missing: ['redis-cli'], isRoot: true, hasAptGet: true })).toEqual({ action: 'install', packages: ['redis-tools'] });
  });

  it('stops with the sudo command when not root', () => {
    const plan = planProvisioning({ missing: ['promtool'], isRoot: false, hasAptGet: true });
    expect(plan).toEqual({
      action: 'stop',
      packages: ['prometheus'],
      message:
        'The tests start promtool, which is not on PATH.\nInstall it (needs root), then run npm test again:\n' +
        '  sudo apt-get update && sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus',
    });
  });

  it('stops, naming the packages, on a machine without apt-get, even as root', () => {
    const plan = planProvisioning({ missing: ['redis-server', 'redis-sentinel'], isRoot: true, hasAptGet: false });
    expect(plan.action).toBe('stop');
    expect(plan.action === 'stop' && plan.message).toContain('This machine has no apt-get');
    expect(plan.action === 'stop' && plan.message).toContain('(redis-sentinel, redis-server)');
  });
});

describe('installCommand', () => {
  it('is the non-interactive apt-get line without recommends', () => {
    expect(installCommand(['prometheus'], false)).toBe(
      'apt-get update && env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus',
    );
  });
});

describe('the script, when the tools are missing and cannot be installed', () => {
  it('exits 1 at once with the command to run', async () => {
    // PATH holds only a node: no redis, no prometheus, and no apt-get to install them with.
    const bin = mkdtempSync(join(tmpdir(), 'gateway-provision-'));
    symlinkSync(process.execPath, join(bin, 'node'));
    const started = Date.now();
    try {
      const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, ['test/provision-system-tools.ts'], { cwd: PROJECT_ROOT, env: { PATH: bin }, timeout: 10_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
        );
      });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain('The tests start redis-server, redis-cli, redis-sentinel, prometheus, promtool, which are not on PATH.');
      expect(result.stderr).toContain(`apt-get install -y --no-install-recommends ${ALL_PACKAGES}`);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
});
