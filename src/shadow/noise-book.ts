// Which differences are noise for an operation: learnt here (production differed from itself there, by that kind) or listed by the operator.
import type { DifferenceKind, ShadowDifference } from './shadow-outcome.ts';

/** Pointers learnt per operation at most: a backend that differs everywhere cannot grow the book without end. */
export const MAX_NOISE_POINTERS = 256;

/**
 * Learnt noise as matching reads it: per pointer, the kinds production differed from itself by there. `any` stands for
 * noise learnt by a build that kept no kind (a report written before a rolling deploy): it matches every kind.
 */
export type NoiseIndex = ReadonlyMap<string, ReadonlySet<DifferenceKind | 'any'>>;

/** A learnt noise entry as stores keep it: no kind when written by a build that kept none. */
export interface LearntEntry {
  readonly pointer: string;
  readonly kind?: DifferenceKind | undefined;
}

/** The index of learnt entries (a report's, read back from its store). */
export function noiseIndex(entries: Iterable<LearntEntry>): NoiseIndex {
  const index = new Map<string, Set<DifferenceKind | 'any'>>();
  for (const { pointer, kind } of entries) {
    let kinds = index.get(pointer);
    if (kinds === undefined) {
      kinds = new Set();
      index.set(pointer, kinds);
    }
    kinds.add(kind ?? 'any');
  }
  return index;
}

/** What this replica learnt; kept across reloads (the composition root holds it), lost on restart (the report keeps the sightings). */
export class NoiseBook {
  private readonly learnt = new Map<string, { index: Map<string, Set<DifferenceKind | 'any'>>; size: number }>();

  /** Notes the differences between two production answers; returns the (pointer, kind) pairs new to this replica. */
  learn(operation: string, differences: readonly ShadowDifference[]): ShadowDifference[] {
    let book = this.learnt.get(operation);
    if (book === undefined) {
      book = { index: new Map(), size: 0 };
      this.learnt.set(operation, book);
    }
    const fresh: ShadowDifference[] = [];
    for (const { pointer, kind } of differences) {
      const kinds = book.index.get(pointer);
      if (kinds?.has(kind) || book.size >= MAX_NOISE_POINTERS) continue;
      if (kinds === undefined) book.index.set(pointer, new Set([kind]));
      else kinds.add(kind);
      book.size++;
      fresh.push({ pointer, kind });
    }
    return fresh;
  }

  /** The noise learnt for an operation. */
  noise(operation: string): NoiseIndex {
    return this.learnt.get(operation)?.index ?? EMPTY;
  }
}

const EMPTY: NoiseIndex = new Map();

/** Whether `pointer` lies strictly under `root`: a member of a noisy object, an element of a noisy array. */
function isStrictlyUnder(pointer: string, root: string): boolean {
  return pointer.startsWith(`${root}/`);
}

/** Whether `pointer` is one of `listed`, or lies under one: an operator's pointer ignores every kind of difference. */
export function isUnder(pointer: string, listed: readonly string[]): boolean {
  for (const root of listed) if (pointer === root || isStrictlyUnder(pointer, root)) return true;
  return false;
}

/**
 * Whether a difference is learnt noise: production differed from itself at the same pointer by the same kind, or at
 * a pointer it lies strictly under (a noisy object's members are noise whatever their kind). An undeclared member
 * whose value changes (a nonce) does not make staging adding or dropping an undeclared member noise, though both
 * differences carry the same `*` pointer: that is what a release must show.
 */
export function isLearntNoise({ pointer, kind }: ShadowDifference, noise: NoiseIndex): boolean {
  const kinds = noise.get(pointer);
  if (kinds !== undefined && (kinds.has(kind) || kinds.has('any'))) return true;
  for (const root of noise.keys()) if (isStrictlyUnder(pointer, root)) return true;
  return false;
}

/** Differences split into those that are noise (learnt, or under a listed pointer) and the rest. */
export function splitNoise(
  differences: readonly ShadowDifference[],
  learnt: NoiseIndex,
  listed: readonly string[],
): { differences: ShadowDifference[]; noise: ShadowDifference[] } {
  const real: ShadowDifference[] = [];
  const noise: ShadowDifference[] = [];
  for (const difference of differences) (isLearntNoise(difference, learnt) || isUnder(difference.pointer, listed) ? noise : real).push(difference);
  return { differences: real, noise };
}
