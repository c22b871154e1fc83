// Which pointers are noise for an operation: learnt here (they differed between two production answers) or listed by the operator.
import type { ShadowDifference } from './shadow-outcome.ts';

/** Pointers learnt per operation at most: a backend that differs everywhere cannot grow the book without end. */
export const MAX_NOISE_POINTERS = 256;

/** What this replica learnt; kept across reloads (the composition root holds it), lost on restart (the report keeps the sightings). */
export class NoiseBook {
  private readonly learnt = new Map<string, Set<string>>();

  /** Notes the pointers that differed between two production answers; returns the ones new to this replica. */
  learn(operation: string, differences: readonly ShadowDifference[]): string[] {
    let pointers = this.learnt.get(operation);
    if (pointers === undefined) {
      pointers = new Set();
      this.learnt.set(operation, pointers);
    }
    const fresh: string[] = [];
    for (const { pointer } of differences) {
      if (pointers.has(pointer) || pointers.size >= MAX_NOISE_POINTERS) continue;
      pointers.add(pointer);
      fresh.push(pointer);
    }
    return fresh;
  }

  /** The pointers learnt for an operation. */
  pointers(operation: string): ReadonlySet<string> {
    return this.learnt.get(operation) ?? EMPTY;
  }
}

const EMPTY: ReadonlySet<string> = new Set();

/** Whether `pointer` is one of `noise`, or lies under one (a member of a noisy object, an element of a noisy array). */
export function isUnder(pointer: string, noise: ReadonlySet<string> | readonly string[]): boolean {
  for (const root of noise) if (pointer === root || pointer.startsWith(`${root}/`)) return true;
  return false;
}

/** Differences split into those that are noise (learnt or listed) and the rest. */
export function splitNoise(
  differences: readonly ShadowDifference[],
  learnt: ReadonlySet<string>,
  listed: readonly string[],
): { differences: ShadowDifference[]; noise: ShadowDifference[] } {
  const real: ShadowDifference[] = [];
  const noise: ShadowDifference[] = [];
  for (const difference of differences) (isUnder(difference.pointer, learnt) || isUnder(difference.pointer, listed) ? noise : real).push(difference);
  return { differences: real, noise };
}
