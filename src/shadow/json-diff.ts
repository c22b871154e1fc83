// Two parsed JSON bodies compared structurally, member by member and element by element, within a bound on the nodes visited.
import { memberToken } from '../contract/declared-pointer.ts';
import type { ShadowDifference } from './shadow-outcome.ts';

/** How much of two bodies is compared at most: the answer check's stalls (decision 0025) are not to come back here. */
export interface DiffBound {
  /** Values visited (both sides) before the comparison stops; what was found so far is kept. */
  maxNodes: number;
}

export interface JsonDiff {
  /** Each pointer and kind once, in the order first met. */
  differences: ShadowDifference[];
  /** The bound stopped the comparison before the bodies' end. */
  truncated: boolean;
}

type JsonKind = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';

function kindOf(value: unknown): JsonKind {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const type = typeof value;
  return type === 'boolean' || type === 'number' || type === 'string' ? type : 'object';
}

/** One JSON value's text with members sorted: equal for equal values whatever their members' order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .map((name) => `${JSON.stringify(name)}:${canonical((value as Record<string, unknown>)[name])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * What differs in `staging` from `production`: a member production has and staging lacks is `missing`, one only staging has is
 * `extra`, a value of another JSON type `type`, another value `value`; arrays are compared element by element (their indexes as
 * `*` in the pointer), and an array of the same elements in another order is one `order` difference at the array. A member
 * name is written as it is only when `memberNames` (the declared response's, src/contract/declared-responses.ts) holds it, and
 * as `*` otherwise (memberToken): the pointers leave for the report, and a name nothing declares is the body's data.
 */
export function diffJson(production: unknown, staging: unknown, bound: DiffBound, memberNames: ReadonlySet<string>): JsonDiff {
  const seen = new Set<string>();
  const differences: ShadowDifference[] = [];
  let budget = bound.maxNodes;
  let truncated = false;

  function note(pointer: string, kind: ShadowDifference['kind'], into: ShadowDifference[]): void {
    const key = `${kind} ${pointer}`;
    if (seen.has(key)) return;
    seen.add(key);
    into.push({ pointer, kind });
  }

  function walk(a: unknown, b: unknown, pointer: string, into: ShadowDifference[]): void {
    if (truncated) return;
    budget -= 2;
    if (budget < 0) {
      truncated = true;
      return;
    }
    const kindA = kindOf(a);
    const kindB = kindOf(b);
    if (kindA !== kindB) note(pointer, 'type', into);
    else if (kindA === 'array') walkArrays(a as unknown[], b as unknown[], pointer, into);
    else if (kindA === 'object') walkObjects(a as Record<string, unknown>, b as Record<string, unknown>, pointer, into);
    else if (a !== b) note(pointer, 'value', into);
  }

  function walkObjects(a: Record<string, unknown>, b: Record<string, unknown>, pointer: string, into: ShadowDifference[]): void {
    for (const name of Object.keys(a)) {
      const at = `${pointer}/${memberToken(name, memberNames)}`;
      if (Object.hasOwn(b, name)) walk(a[name], b[name], at, into);
      else note(at, 'missing', into);
    }
    for (const name of Object.keys(b)) if (!Object.hasOwn(a, name)) note(`${pointer}/${memberToken(name, memberNames)}`, 'extra', into);
  }

  function walkArrays(a: unknown[], b: unknown[], pointer: string, into: ShadowDifference[]): void {
    const element = `${pointer}/*`;
    const common = Math.min(a.length, b.length);
    // Found apart first: the same elements in another order are one `order`, not a difference per element.
    const found: ShadowDifference[] = [];
    for (let i = 0; i < common && !truncated; i++) walk(a[i], b[i], element, found);
    if (found.length > 0 && a.length === b.length && !truncated && sameElements(a, b)) {
      for (const difference of found) seen.delete(`${difference.kind} ${difference.pointer}`);
      note(pointer, 'order', into);
    } else {
      into.push(...found);
    }
    if (a.length > b.length) note(element, 'missing', into);
    if (b.length > a.length) note(element, 'extra', into);
  }

  /** Whether two arrays hold the same elements, counted (bounded by the same budget: canonical text visits every node). */
  function sameElements(a: unknown[], b: unknown[]): boolean {
    budget -= a.length + b.length;
    if (budget < 0) {
      truncated = true;
      return false;
    }
    const counts = new Map<string, number>();
    for (const value of a) {
      const text = canonical(value);
      counts.set(text, (counts.get(text) ?? 0) + 1);
    }
    for (const value of b) {
      const text = canonical(value);
      const left = counts.get(text);
      if (left === undefined || left === 0) return false;
      counts.set(text, left - 1);
    }
    return true;
  }

  walk(production, staging, '', differences);
  return { differences, truncated };
}
