// Reads and writes shrunk counterexamples as byte-script fixtures in test/fixtures/edge/.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EdgeCase } from './script.ts';
import type { Violation } from './violations.ts';

export const FIXTURE_DIR = fileURLToPath(new URL('../fixtures/edge/', import.meta.url));

export interface EdgeFixture {
  /** What the script shows, in a sentence (edited by hand once understood). */
  description: string;
  /**
   * Where it came from: the run's seed, fast-check's path to the shrunk case, when, the commit it was run against, and `tls` when
   * generated over TLS (replayed over TLS only when it needs TLS, script.ts's needsTls; over both transports otherwise).
   */
  found: { seed: number; path: string | null; at: string; revision?: string; transport?: 'tls' };
  /** The violations seen when it was found (for the reader; replay checks the invariants afresh). */
  violations: Violation[];
  case: EdgeCase;
}

/** A name from the invariants violated and the script's own hash: the same shrunk case is saved once. */
export function fixtureName(edgeCase: EdgeCase, violations: readonly Violation[]): string {
  const invariants = [...new Set(violations.map((violation) => violation.invariant))].sort().join('');
  const hash = createHash('sha256').update(JSON.stringify(edgeCase)).digest('hex').slice(0, 8);
  return `found-${invariants}-${hash}`;
}

/** Writes the fixture; returns its path. */
export function saveFixture(fixture: EdgeFixture, name = fixtureName(fixture.case, fixture.violations)): string {
  mkdirSync(FIXTURE_DIR, { recursive: true });
  const path = join(FIXTURE_DIR, `${name}.json`);
  writeFileSync(path, `${JSON.stringify(fixture, null, 2)}\n`);
  return path;
}

export function listFixtures(): Array<{ name: string; fixture: EdgeFixture }> {
  let files: string[];
  try {
    files = readdirSync(FIXTURE_DIR)
      .filter((file) => file.endsWith('.json'))
      .sort();
  } catch {
    return [];
  }
  return files.map((file) => ({ name: file.slice(0, -'.json'.length), fixture: JSON.parse(readFileSync(join(FIXTURE_DIR, file), 'utf8')) as EdgeFixture }));
}
