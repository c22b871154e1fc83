// Finds an integer written as 1.0, 1e2 or -0 where the schema asks for an integer: one value, one spelling.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { describePath, type NonCanonicalInteger } from './strict-json.ts';

/**
 * The first of `literals` that sits where `validate`'s schema requires an integer, or undefined. `value` must pass `validate`; it is
 * changed while probing and restored. The schema is asked, not walked: made non-integral, such a literal fails with an integer
 * error at its own place. One probe with every literal changed settles the common cases; each is tried alone only when it fails otherwise.
 */
export function findNonCanonicalInteger(validate: ValidateFunction, value: unknown, literals: readonly NonCanonicalInteger[]): NonCanonicalInteger | undefined {
  if (literals.length === 0) return undefined;
  // The literals' paths start at the value; holding it in a box lets a body that is one number be probed too.
  const box = { value };
  const failing = (): ErrorObject[] | undefined => (validate(box.value) ? undefined : (validate.errors ?? []));
  const demanded = (errors: readonly ErrorObject[], literal: NonCanonicalInteger): boolean =>
    errors.some((error) => demandsInteger(error) && samePath(error.instancePath, literal.path));

  const restoreAll = literals.map((literal) => probe(box, literal.path));
  const errors = failing();
  for (const restore of restoreAll) restore();
  if (!errors) return undefined;
  const found = literals.find((literal) => demanded(errors, literal));
  if (found) return found;

  return literals.find((literal) => {
    const restore = probe(box, literal.path);
    const alone = failing();
    restore();
    return alone !== undefined && demanded(alone, literal);
  });
}

/** `Request body field 'categoryId' must be written as a plain integer, not 1e2`. */
export function describeNonCanonicalInteger(literal: NonCanonicalInteger, subject: string): string {
  const where = literal.path.length > 0 ? ` field '${describePath(literal.path)}'` : '';
  const text = literal.text.length > 40 ? `${literal.text.slice(0, 39)}…` : literal.text;
  return `${subject}${where} must be written as a plain integer, not ${text}`;
}

/** Replaces the number at `path` by a nearby non-integer; returns the function that puts it back. */
function probe(box: { value: unknown }, path: readonly (string | number)[]): () => void {
  let parent = box as Record<string | number, unknown>;
  let key: string | number = 'value';
  for (const segment of path) {
    parent = parent[key] as Record<string | number, unknown>;
    key = segment;
  }
  const original = parent[key] as number;
  // Above 2^52 every double is an integer; the largest non-integer stands in for those.
  const stand = Math.abs(original) < 2 ** 52 ? original + 0.5 : Math.sign(original) * (2 ** 52 - 0.5);
  set(parent, key, stand);
  return () => set(parent, key, original);
}

function set(parent: Record<string | number, unknown>, key: string | number, value: number): void {
  // A member named "__proto__" is an own property here; assigning it would set the prototype instead.
  if (key === '__proto__') Object.defineProperty(parent, key, { value });
  else parent[key] = value;
}

function demandsInteger(error: ErrorObject): boolean {
  if (error.keyword === 'type')
    return String((error.params as { type: unknown }).type)
      .split(',')
      .includes('integer');
  return error.keyword === 'format' && /^int(32|64)$/.test(String((error.params as { format: unknown }).format));
}

/** Whether Ajv's instancePath (a JSON Pointer) names `path`. */
function samePath(pointer: string, path: readonly (string | number)[]): boolean {
  const segments = pointer === '' ? [] : pointer.slice(1).split('/');
  return segments.length === path.length && segments.every((segment, at) => segment.replaceAll('~1', '/').replaceAll('~0', '~') === String(path[at]));
}
