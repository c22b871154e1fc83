// npm test's first step: installs the system tools the tests start, or stops at once with the command to run.
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../support/start-gateway-process.ts';
import { disableCommands, servicesOf, withServiceStartsRefused } from '../packaged-services.ts';
import { installCommand, planProvisioning } from '../provision-system-tools.ts';

const ALL_PACKAGES = 'chromium faketime gcc prometheus python3-minimal redis-sentinel redis-server redis-tools';

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
      expect(result.stderr).toContain(
        'The tests start redis-server, redis-cli, redis-sentinel, prometheus, promtool, chromium, python3, faketime, cc, which are not on PATH.',
      );
      expect(result.stderr).toContain(`apt-get install -y --no-install-recommends ${ALL_PACKAGES}`);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
});

describe('the services the install adds', () => {
  // What `dpkg -L prometheus redis-server` lists, in part.
  const files = [
    '/etc/default/prometheus',
    '/etc/init.d/prometheus',
    '/lib/systemd/system/prometheus.service',
    '/usr/bin/prometheus',
    '/etc/init.d/redis-server',
    '/lib/systemd/system/redis-server.service',
    '/lib/systemd/system/redis-server@.service',
    '/usr/lib/systemd/system/redis-sentinel.service',
  ];

  it("are the systemd units (not templates) and SysV scripts among the packages' files", () => {
    expect(servicesOf(files)).toEqual({
      units: ['prometheus.service', 'redis-sentinel.service', 'redis-server.service'],
      initScripts: ['prometheus', 'redis-server'],
    });
  });

  it.each([
    [
      'systemd running: disabled and stopped',
      { hasSystemctl: true, systemdRunning: true, hasUpdateRcD: true },
      [
        ['systemctl', 'disable', '--now', 'prometheus.service'],
        ['update-rc.d', 'prometheus', 'disable'],
      ],
    ],
    [
      'a container with systemctl but no systemd: the links removed, nothing to stop',
      { hasSystemctl: true, systemdRunning: false, hasUpdateRcD: true },
      [
        ['systemctl', 'disable', 'prometheus.service'],
        ['update-rc.d', 'prometheus', 'disable'],
      ],
    ],
    ['no systemctl: the SysV links only', { hasSystemctl: false, systemdRunning: false, hasUpdateRcD: true }, [['update-rc.d', 'prometheus', 'disable']]],
  ])('are disabled where %s', (_, managers, commands) => {
    expect(disableCommands({ units: ['prometheus.service'], initScripts: ['prometheus'] }, managers)).toEqual(commands);
  });

  it('need no command when the install added none', () => {
    expect(disableCommands({ units: [], initScripts: [] }, { hasSystemctl: true, systemdRunning: true, hasUpdateRcD: true })).toEqual([]);
  });
});

describe('withServiceStartsRefused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-policy-rc-'));
  const policy = join(dir, 'policy-rc.d');

  it('refuses every service start (exit 101) during the install, and leaves no policy where there was none', () => {
    const during = withServiceStartsRefused(() => {
      expect(statSync(policy).mode & 0o777).toBe(0o755);
      return spawnSync(policy, ['prometheus', 'start']).status;
    }, policy);
    expect(during).toBe(101);
    expect(existsSync(policy)).toBe(false);
  });

  it('puts back the policy that was there, even when the install throws', () => {
    writeFileSync(policy, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    expect(() =>
      withServiceStartsRefused(() => {
        expect(spawnSync(policy, ['prometheus', 'start']).status).toBe(101);
        throw new Error('apt-get failed');
      }, policy),
    ).toThrow('apt-get failed');
    expect(readFileSync(policy, 'utf8')).toBe('#!/bin/sh\nexit 0\n');
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('the script, installing as root', () => {
  /**
   * A machine whose apt-get, dpkg and service managers are fakes on PATH, recording what they are asked:
   * apt-get "installs" the tools (after asking the start policy what it says of prometheus), dpkg knows
   * the packages' service files, systemctl and update-rc.d write their arguments to a log.
   */
  function fakeMachine(dir: string): { bin: string; state: string } {
    const bin = join(dir, 'bin');
    const state = join(dir, 'state');
    mkdirSync(bin);
    mkdirSync(state);
    symlinkSync(process.execPath, join(bin, 'node'));
    // A package that was there before, with a service of its own: left as it was.
    writeFileSync(join(state, 'installed'), 'cron\n');
    const script = (name: string, body: string) => writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    script(
      'apt-get',
      `[ "$1" = update ] && exit 0
"$PROVISION_POLICY_RC_D" prometheus start; echo $? > "${state}/policy-during-install"
for tool in redis-server redis-cli redis-sentinel prometheus promtool chromium python3 faketime cc; do printf '#!/bin/sh\\n' > "${bin}/$tool"; /bin/chmod 755 "${bin}/$tool"; done
for arg in "$@"; do case "$arg" in -*|install) ;; *) echo "$arg" >> "${state}/installed";; esac; done`,
    );
    script('dpkg-query', `while read -r name; do echo "ii  $name"; done < "${state}/installed"`);
    script(
      'dpkg',
      `case "$2" in
  prometheus) printf '/usr/bin/prometheus\\n/etc/init.d/prometheus\\n/lib/systemd/system/prometheus.service\\n';;
  redis-server) printf '/etc/init.d/redis-server\\n/lib/systemd/system/redis-server.service\\n/lib/systemd/system/redis-server@.service\\n';;
  redis-sentinel) printf '/usr/lib/systemd/system/redis-sentinel.service\\n';;
  cron) printf '/etc/init.d/cron\\n/lib/systemd/system/cron.service\\n';;
esac`,
    );
    script('systemctl', `echo "systemctl $*" >> "${state}/calls"`);
    script('update-rc.d', `echo "update-rc.d $*" >> "${state}/calls"`);
    return { bin, state };
  }

  it.runIf(process.getuid?.() === 0)('starts no service during the install, then disables the services of the packages it added', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gateway-provision-root-'));
    try {
      const { bin, state } = fakeMachine(dir);
      const policy = join(dir, 'policy-rc.d');
      const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          ['test/provision-system-tools.ts'],
          { cwd: PROJECT_ROOT, env: { PATH: bin, PROVISION_POLICY_RC_D: policy }, timeout: 10_000 },
          (error, _stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stderr }),
        );
      });
      expect(result.stderr).toContain(`installing ${ALL_PACKAGES.split(' ').join(', ')}`);
      expect(result.code, result.stderr).toBe(0);
      expect(readFileSync(join(state, 'policy-during-install'), 'utf8')).toBe('101\n');
      expect(existsSync(policy)).toBe(false);
      // --now (stop as well) only where systemd runs, which the script reads from the real /run/systemd/system.
      const now = existsSync('/run/systemd/system') ? ' --now' : '';
      expect(readFileSync(join(state, 'calls'), 'utf8').split('\n').filter(Boolean)).toEqual([
        `systemctl disable${now} prometheus.service redis-sentinel.service redis-server.service`,
        'update-rc.d prometheus disable',
        'update-rc.d redis-server disable',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
