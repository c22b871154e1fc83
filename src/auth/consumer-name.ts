// Which consumer names a key may carry: printable text, bounded, so no name can forge lines in a terminal or a log.

/** Code points, as JSON Schema's `maxLength` counts them (config/admin.openapi.yaml, `ConsumerName`). */
export const MAX_CONSUMER_NAME_LENGTH = 128;

/**
 * Letters, marks, numbers, punctuation, symbols and inner U+0020: no controls, format characters (bidi overrides),
 * other separators, unassigned or private-use code points. The document's `pattern` is this expression (`u` flag).
 */
export const CONSUMER_NAME_PATTERN = '^[\\p{L}\\p{M}\\p{N}\\p{P}\\p{S}](?:[\\p{L}\\p{M}\\p{N}\\p{P}\\p{S} ]*[\\p{L}\\p{M}\\p{N}\\p{P}\\p{S}])?$';

const CONSUMER_NAME = new RegExp(CONSUMER_NAME_PATTERN, 'u');

/** Why `name` cannot be a consumer name, or undefined when it can. */
export function consumerNameProblem(name: string): string | undefined {
  const length = [...name].length;
  if (length === 0) return 'a key needs a consumer name';
  if (length > MAX_CONSUMER_NAME_LENGTH) return `a consumer name is at most ${MAX_CONSUMER_NAME_LENGTH} characters (this one has ${length})`;
  if (!CONSUMER_NAME.test(name))
    return 'a consumer name holds letters, marks, numbers, punctuation, symbols and inner spaces only: no control or format characters, other separators, or leading or trailing space';
  return undefined;
}
