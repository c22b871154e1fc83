// npm test, first step: installs the system tools the tests start (Debian packages) or stops at once saying how.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { disableCommands, POLICY_RC_D, servicesOf, withServiceStartsRefused } from './packaged-services.ts';

/** Every command support/, test/helpers and the integration tests spawn, and the Debian package that ships it. */
export const SYSTEM_TOOLS: Readonly<Record<string, string>> = {
  'redis-server': 'redis-server',
  'redis-cli': 'redis-tools',
  'redis-sentinel': 'redis-sentinel',
  prometheus: 'prometheus',
  promtool: 'prometheus',
  // A real browser calling the gateway from a page on another origin (test/integration/cors-browser.test.ts).
  chromium: 'chromium',
  // Clients with a small receive window (SO_RCVBUF, which node:net cannot set): test/helpers/small-window-clients.py.
  python3: 'python3-minimal',
  // Redis's own clock set by a test (test/helpers/redis-clock.ts): libfaketime, and cc for its preload shim.
  faketime: 'faketime',
  cc: 'gcc',
};

export interface Machine {
  /** Commands of SYSTEM_TOOLS not found on PATH. */
  missing: readonly string[];
  isRoot: boolean;
  hasAptGet: boolean;
}

export type Provisioning = { action: 'none' } | { action: 'install'; packages: string[] } | { action: 'stop'; packages: string[]; message: string };

/** The command an operator runs to install the packages by hand. */
export function installCommand(packages: readonly string[], sudo: boolean): string {
  const as = sudo ? 'sudo ' : '';
  return `${as}apt-get update && ${as}env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${packages.join(' ')}`;
}

/** What to do about the missing tools: nothing, install them (root with apt-get), or stop with the command to run. */
export function planProvisioning(machine: Machine): Provisioning {
  if (machine.missing.length === 0) return { action: 'none' };
  const packages = [...new Set(machine.missing.map((command) => SYSTEM_TOOLS[command] ?? command))].sort();
  if (machine.isRoot && machine.hasAptGet) return { action: 'install', packages };
  const lacking = `The tests start ${machine.missing.join(', ')}, which ${machine.missing.length === 1 ? 'is' : 'are'} not on PATH.`;
  const message = machine.hasAptGet
    ? `${lacking}\nInstall ${packages.length === 1 ? 'it' : 'them'} (needs root), then run npm test again:\n  ${installCommand(packages, true)}`
    : `${lacking}\nThis machine has no apt-get; on Debian or Ubuntu the command is\n  ${installCommand(packages, true)}\n` +
      `elsewhere install the equivalent packages (${packages.join(', ')}), then run npm test again.`;
  return { action: 'stop', packages, message };
}

/** Whether an executable file of this name is in one of PATH's directories. */
export function onPath(command: string, path: string | undefined): boolean {
  return (path ?? '').split(delimiter).some((dir) => {
    if (!dir) return false;
    try {
      const file = join(dir, command);
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  });
}

function missingTools(): string[] {
  return Object.keys(SYSTEM_TOOLS).filter((command) => !onPath(command, process.env.PATH));
}

function aptGet(args: string[]): boolean {
  const result = spawnSync('apt-get', args, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return result.status === 0;
}

/** Every package dpkg holds as installed. */
function installedPackages(): Set<string> {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format, not a template.
  const result = spawnSync('dpkg-query', ['-W', '-f', '${db:Status-Abbrev} ${Package}\\n'], { encoding: 'utf8' });
  return new Set(result.stdout.split('\n').flatMap((line) => (line.startsWith('ii ') ? [line.split(/\s+/)[1]!] : [])));
}

/**
 * Installs the packages with every service start refused, then disables the services of every package
 * the install added (dependencies too): apt would otherwise leave prometheus.service running on 9090 and
 * enabled at boot, and redis-server on 6379. A service of a package that was already there is left as it was.
 */
function installQuietly(packages: readonly string[]): boolean {
  const before = installedPackages();
  // PROVISION_POLICY_RC_D: for this script's own test, which runs it against a fake apt-get.
  const policyFile = process.env.PROVISION_POLICY_RC_D || POLICY_RC_D;
  const installed = withServiceStartsRefused(
    () => aptGet(['update', '-qq']) && aptGet(['install', '-y', '-qq', '--no-install-recommends', ...packages]),
    policyFile,
  );
  const added = [...installedPackages()].filter((name) => !before.has(name));
  const files = added.flatMap((name) => spawnSync('dpkg', ['-L', name], { encoding: 'utf8' }).stdout.split('\n'));
  const commands = disableCommands(servicesOf(files), {
    hasSystemctl: onPath('systemctl', process.env.PATH),
    systemdRunning: existsSync('/run/systemd/system'),
    hasUpdateRcD: onPath('update-rc.d', process.env.PATH),
  });
  for (const [command, ...args] of commands) {
    process.stderr.write(`provision-system-tools: ${command} ${args.join(' ')}\n`);
    // Loud, not fatal: the tests start their own servers on free ports whatever a package left enabled.
    if (spawnSync(command!, args, { stdio: ['ignore', 'inherit', 'inherit'] }).status !== 0) {
      process.stderr.write(
        `provision-system-tools: warning: could not disable a service the install added (${command} ${args.join(' ')} failed); disable it yourself\n`,
      );
    }
  }
  return installed;
}

function fail(message: string): never {
  process.stderr.write(`\nprovision-system-tools: ${message}\n\n`);
  process.exit(1);
}

if (import.meta.main) {
  const plan = planProvisioning({
    missing: missingTools(),
    isRoot: process.getuid?.() === 0,
    hasAptGet: onPath('apt-get', process.env.PATH),
  });
  if (plan.action === 'stop') fail(plan.message);
  if (plan.action === 'install') {
    process.stderr.write(`provision-system-tools: installing ${plan.packages.join(', ')} (apt-get, as root)\n`);
    const installed = installQuietly(plan.packages);
    if (!installed) fail(`apt-get could not install ${plan.packages.join(', ')}; run it yourself and see why:\n  ${installCommand(plan.packages, false)}`);
    const still = missingTools();
    if (still.length > 0) fail(`still not on PATH after installing ${plan.packages.join(', ')}: ${still.join(', ')}`);
  }
}
