// The services Debian packages start and enable on install, kept from running: the tests start their own redis and prometheus.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

/**
 * Debian's hook that invoke-rc.d and deb-systemd-invoke ask before starting a service during an install;
 * exit 101 means "not now". Docker's Debian images ship one; a machine booted with systemd usually has none.
 */
export const POLICY_RC_D = '/usr/sbin/policy-rc.d';

const DENY_ALL = '#!/bin/sh\n# Written by test/provision-system-tools.ts for the duration of its apt-get install.\nexit 101\n';

/**
 * Runs `install` with every service start refused (prometheus.service would otherwise take 9090, the
 * admin listener's default port, and redis-server 6379), then puts back the policy that was there, or none.
 */
export function withServiceStartsRefused<T>(install: () => T, policyFile: string = POLICY_RC_D): T {
  const saved = `${policyFile}.provision-system-tools`;
  // A run killed mid-install (Ctrl-C, a cancelled job) left its policy in place: put the machine's back
  // first, so this run saves the machine's, not ours.
  if (existsSync(saved)) renameSync(saved, policyFile);
  else if (existsSync(policyFile) && readFileSync(policyFile, 'utf8') === DENY_ALL) rmSync(policyFile);
  const hadPolicy = existsSync(policyFile);
  if (hadPolicy) renameSync(policyFile, saved);
  try {
    writeFileSync(policyFile, DENY_ALL, { mode: 0o755 });
    return install();
  } finally {
    rmSync(policyFile, { force: true });
    if (hadPolicy) renameSync(saved, policyFile);
  }
}

/** A package's services: systemd units (not templates such as redis-server@) and SysV init scripts. */
export interface PackagedServices {
  units: string[];
  initScripts: string[];
}

/** The services among packages' files (`dpkg -L`). */
export function servicesOf(files: readonly string[]): PackagedServices {
  const units = new Set<string>();
  const initScripts = new Set<string>();
  for (const file of files) {
    const unit = /^(?:\/usr)?\/lib\/systemd\/system\/([^/@]+\.service)$/.exec(file)?.[1];
    const script = /^\/etc\/init\.d\/([^/]+)$/.exec(file)?.[1];
    if (unit !== undefined) units.add(unit);
    if (script !== undefined) initScripts.add(script);
  }
  return { units: [...units].sort(), initScripts: [...initScripts].sort() };
}

export interface ServiceManagers {
  hasSystemctl: boolean;
  /** systemd is PID 1 (/run/systemd/system exists): a unit can be stopped as well as disabled. */
  systemdRunning: boolean;
  hasUpdateRcD: boolean;
}

/**
 * The commands that leave the services disabled, and stopped where systemd runs. `systemctl disable`
 * edits the unit links without a running systemd too (a container); `update-rc.d disable`, the SysV links.
 */
export function disableCommands({ units, initScripts }: PackagedServices, managers: ServiceManagers): string[][] {
  const commands: string[][] = [];
  if (managers.hasSystemctl && units.length > 0) commands.push(['systemctl', 'disable', ...(managers.systemdRunning ? ['--now'] : []), ...units]);
  if (managers.hasUpdateRcD) for (const script of initScripts) commands.push(['update-rc.d', script, 'disable']);
  return commands;
}
