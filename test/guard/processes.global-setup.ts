// vitest global set-up of every tier: at the tier's end, a process a test started that is still alive is stopped and fails the run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { scaled } from '../../support/time-scale.ts';
import { readRegistry, REGISTRY_VARIABLE, startTimeOf, type StartedChild } from './child-registry.ts';

/** Still the process that was started (the pid not reused) and running (a zombie has exited). */
const alive = (child: StartedChild) => startTimeOf(child.pid) === child.startTime;

export default function setup(): () => Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'test-children-'));
  const registry = join(dir, 'children.jsonl');
  process.env[REGISTRY_VARIABLE] = registry;
  return async () => {
    // A process told to stop in an afterAll may still be on its way out: a grace period before it counts as left behind.
    const deadline = Date.now() + scaled(5000);
    let left = readRegistry(registry).filter(alive);
    while (left.length > 0 && Date.now() < deadline) {
      await sleep(100);
      left = left.filter(alive);
    }
    for (const child of left) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        /* gone meanwhile */
      }
    }
    rmSync(dir, { recursive: true, force: true });
    if (left.length > 0) {
      const list = left.map((child) => `  pid ${child.pid} (${child.command}) started by ${child.testFile}`).join('\n');
      throw new Error(`${left.length} process(es) a test started outlived the tier (now killed); stop each in afterAll or finally:\n${list}`);
    }
  };
}
