// The structural comparison of two JSON bodies: each difference's pointer (array indexes as `*`) and kind, within its bound.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffJson } from '../../../src/shadow/json-diff.ts';

const BOUND = { maxNodes: 100_000 };
/** The member names these examples' document would declare. */
const DECLARED: ReadonlySet<string> = new Set(['id', 'name', 'status', 'state', 'items', 'tags', 'a', 'b', 'c', 'i', 'a/b', 'c~d', 'owners', 'since']);
const diff = (production: unknown, staging: unknown, declared = DECLARED) => diffJson(production, staging, BOUND, declared).differences;

/** A JSON value whose member names are sometimes declared, sometimes e-mail addresses, sometimes anything. */
const hostileJson = (names: fc.Arbitrary<string>) =>
  fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.string()),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(names, tie('value'), { maxKeys: 4 }),
    ),
  })).value;

describe('diffJson', () => {
  it('finds nothing between equal bodies, whatever their members order', () => {
    expect(diff({ a: 1, b: [1, { c: null }] }, { b: [1, { c: null }], a: 1 })).toEqual([]);
  });

  it('names a member only production has as missing, one only staging has as extra', () => {
    expect(diff({ id: 1, status: 'sold' }, { id: 1, state: 'sold' })).toEqual([
      { pointer: '/status', kind: 'missing' },
      { pointer: '/state', kind: 'extra' },
    ]);
  });

  it('names another JSON type as type and another value as value', () => {
    expect(diff({ id: 1, name: 'Rex' }, { id: '1', name: 'Max' })).toEqual([
      { pointer: '/id', kind: 'type' },
      { pointer: '/name', kind: 'value' },
    ]);
    expect(diff([], {})).toEqual([{ pointer: '', kind: 'type' }]);
    expect(diff(null, 0)).toEqual([{ pointer: '', kind: 'type' }]);
  });

  it('generalises array indexes to * and names each pointer and kind once', () => {
    const production = { items: [{ status: 'a' }, { status: 'b' }, { status: 'c' }] };
    const staging = { items: [{ status: 'x' }, { status: 'y' }, { status: 'c' }] };
    expect(diff(production, staging)).toEqual([{ pointer: '/items/*/status', kind: 'value' }]);
  });

  it('names elements production has beyond staging as missing, and the reverse as extra', () => {
    expect(diff([1, 2, 3], [1, 2])).toEqual([{ pointer: '/*', kind: 'missing' }]);
    expect(diff([1], [1, 2])).toEqual([{ pointer: '/*', kind: 'extra' }]);
  });

  it('names the same elements in another order as one order difference at the array', () => {
    expect(diff({ tags: ['a', 'b', { c: 1 }] }, { tags: [{ c: 1 }, 'a', 'b'] })).toEqual([{ pointer: '/tags', kind: 'order' }]);
    // Other elements, not only another order: element by element.
    expect(diff({ tags: ['a', 'b'] }, { tags: ['b', 'c'] })).toEqual([{ pointer: '/tags/*', kind: 'value' }]);
  });

  it('escapes ~ and / in member names as RFC 6901 says', () => {
    expect(diff({ 'a/b': 1, 'c~d': 1 }, { 'a/b': 2 })).toEqual([
      { pointer: '/a~1b', kind: 'value' },
      { pointer: '/c~0d', kind: 'missing' },
    ]);
  });

  it('writes a member name the document does not declare as *: a map keyed by e-mail addresses leaves no address', () => {
    const production = { owners: { 'ann@example.com': { since: 1 }, 'bob@example.com': { since: 2 } } };
    const staging = { owners: { 'ann@example.com': { since: 3 }, 'cy@example.com': { since: 2 } } };
    expect(diff(production, staging)).toEqual([
      { pointer: '/owners/*/since', kind: 'value' },
      { pointer: '/owners/*', kind: 'missing' },
      { pointer: '/owners/*', kind: 'extra' },
    ]);
    // Nothing declared (no response schema): no name at all.
    expect(diff(production, staging, new Set())).toEqual([
      { pointer: '/*/*/*', kind: 'value' },
      { pointer: '/*/*', kind: 'missing' },
      { pointer: '/*/*', kind: 'extra' },
    ]);
  });

  it('never writes a pointer segment other than a declared name or * (property)', () => {
    const declaredPool = ['id', 'name', 'a/b', 'c~d', 'ann@example.com'];
    const names = fc.oneof(fc.constantFrom(...declaredPool), fc.emailAddress(), fc.string({ maxLength: 6 }));
    const asToken = (name: string) => name.replaceAll('~', '~0').replaceAll('/', '~1');
    fc.assert(
      fc.property(hostileJson(names), hostileJson(names), fc.subarray(declaredPool), (a, b, declaredNames) => {
        const declared = new Set(declaredNames);
        const allowed = new Set(['*', ...declaredNames.map(asToken)]);
        for (const { pointer } of diff(a, b, declared)) {
          if (pointer === '') continue;
          for (const segment of pointer.slice(1).split('/')) expect(allowed).toContain(segment);
        }
      }),
    );
  });

  it('stops at its bound and says so, keeping what it found', () => {
    const production = Array.from({ length: 1000 }, (_, i) => ({ i }));
    const staging = Array.from({ length: 1000 }, (_, i) => ({ i: i + 1 }));
    const bounded = diffJson(production, staging, { maxNodes: 100 }, DECLARED);
    expect(bounded.truncated).toBe(true);
    expect(bounded.differences).toEqual([{ pointer: '/*/i', kind: 'value' }]);
  });

  it('finds nothing between a body and itself, or between equal ones, and points from the root (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(diff(value, structuredClone(value))).toEqual([]);
      }),
    );
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        const found = diff(a, b);
        const same = JSON.stringify(a) === JSON.stringify(b);
        if (same) expect(found).toEqual([]);
        // Every pointer starts at the root.
        for (const { pointer } of found) expect(pointer === '' || pointer.startsWith('/')).toBe(true);
      }),
    );
  });

  it('finds a difference whenever the bodies differ as values (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        // JSON values differ when their canonical texts do (members sorted); -0 and 0 are one JSON number.
        const canonical = (value: unknown): string =>
          JSON.stringify(value, (_key, node: unknown) =>
            node !== null && typeof node === 'object' && !Array.isArray(node)
              ? Object.fromEntries(Object.entries(node).sort(([x], [y]) => (x < y ? -1 : 1)))
              : node,
          );
        if (canonical(a) !== canonical(b)) expect(diff(a, b).length).toBeGreaterThan(0);
      }),
    );
  });
});
