// Exact version pins only where a fork reads a library's internals, and every such library named in the forks table.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');
const { dependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
/** The forks table's rows, one a module. */
const forksTable = readFileSync(join(ROOT, 'src/forks/README.md'), 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('| `src/'));

const exactlyPinned = Object.entries(dependencies)
  .filter(([, range]) => /^\d/.test(range))
  .map(([name]) => name);

describe('the dependencies', () => {
  it('pin an exact version of at most four libraries', () => {
    expect(exactlyPinned.length).toBeLessThanOrEqual(4);
  });

  it('pin only libraries the forks table names, with the version pinned', () => {
    for (const name of exactlyPinned) {
      expect(forksTable.filter((row) => row.includes(`${name} \`${dependencies[name]}\``)).length, name).toBeGreaterThan(0);
    }
  });

  it('list in the forks table modules that exist', () => {
    expect(forksTable.length).toBeGreaterThan(0);
    for (const row of forksTable) {
      const module = /^\| `(src\/[^`]+\.ts)`/.exec(row)?.[1];
      expect(() => readFileSync(join(ROOT, module ?? 'missing'))).not.toThrow();
    }
  });
});
