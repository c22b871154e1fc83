// Every process a test file starts, written to the tier's registry (TEST_CHILD_REGISTRY) so the tier's end can check none outlived it.
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync, readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';

/** The registry file's variable: set by the tier's global set-up, inherited by its workers. */
export const REGISTRY_VARIABLE = 'TEST_CHILD_REGISTRY';

export interface StartedChild {
  pid: number;
  /** /proc/<pid>/stat's start time: a pid the kernel reused for another process is not taken for this one. */
  startTime: string;
  command: string;
  testFile: string;
}

/** The start time of `pid` (clock ticks after boot) while it runs; undefined once it is gone or has exited (a zombie). */
export function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : fields[19];
  } catch {
    return undefined;
  }
}

/**
 * Subscribes once per worker to Node's `child_process` channel (every spawn, execFile and fork): each child is
 * recorded with the test file running, whichever helper started it.
 */
export function recordChildren(currentFile: () => string): void {
  const file = process.env[REGISTRY_VARIABLE];
  const state = globalThis as { __childRegistrySubscribed?: boolean };
  if (file === undefined || state.__childRegistrySubscribed) return;
  state.__childRegistrySubscribed = true;
  subscribe('child_process', (message) => {
    // Published as the ChildProcess is made, before it has a pid: recorded once it has spawned.
    const child = (message as { process: ChildProcess }).process;
    const testFile = currentFile();
    child.once('spawn', () => {
      const startTime = child.pid === undefined ? undefined : startTimeOf(child.pid);
      // Gone already: nothing to leave behind.
      if (startTime === undefined) return;
      const entry: StartedChild = { pid: child.pid!, startTime, command: child.spawnargs.join(' ').slice(0, 200), testFile };
      appendFileSync(file, `${JSON.stringify(entry)}\n`);
    });
  });
}

export function readRegistry(file: string): StartedChild[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as StartedChild);
}
