// A configuration fault in the gateway's words (what a good value looks like), and the files a configuration names that cannot be read.
import { accessSync, constants } from 'node:fs';
import { resolve } from 'node:path';

/** The parts of a zod issue the words are chosen by (zod's issue union, loosely: every code's fields optional). */
interface Issue {
  code?: string;
  expected?: string;
  input?: unknown;
  origin?: string;
  minimum?: unknown;
  maximum?: unknown;
  inclusive?: boolean;
  values?: readonly unknown[];
  format?: string;
}

const EXAMPLE_INSTANT = '2027-01-01T00:00:00Z';

/**
 * zod's default messages ("Too small: expected number to be >0", "Invalid URL") said as the gateway says them,
 * with a good value where one helps; undefined keeps a message the schema gives itself.
 */
export function inGatewayWords(issue: Issue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'number') return 'must be a number';
      return `must be ${issue.expected === 'array' ? 'a list' : issue.expected === 'object' ? 'a mapping of keys to values' : `a ${issue.expected}`}`;
    case 'too_small':
      if (issue.origin === 'string') return 'must not be empty';
      if (issue.origin === 'array') return `must hold at least ${String(issue.minimum)} item(s)`;
      return `must be ${issue.inclusive ? 'at least' : 'greater than'} ${String(issue.minimum)}${issue.minimum === 0 && !issue.inclusive ? ' (a whole number such as 60)' : ''}`;
    case 'too_big':
      return `must be at most ${String(issue.maximum)}`;
    case 'invalid_value':
      return `must be one of ${(issue.values ?? []).map(String).join(', ')}`;
    case 'invalid_format':
      if (issue.format === 'url') return 'must be an absolute URL with its scheme, such as https://docs.example.com/page';
      if (issue.format === 'datetime') return `must be a date and time with its offset (ISO 8601), such as ${EXAMPLE_INSTANT}`;
      return undefined;
    default:
      return undefined;
  }
}

/** Keys whose value names a file relative to the configuration file, not the working directory. */
const DOCUMENT_KEYS = new Set(['contract', 'document']);

/**
 * Every file the (unvalidated) configuration names that cannot be read: `*File` keys as given, the documents
 * relative to `configDir`. Told with the schema's faults, so an operator fixes both in one pass.
 */
export function unreadableFiles(
  config: unknown,
  configDir: string,
  path: readonly (string | number)[] = [],
): Array<{ path: (string | number)[]; problem: string }> {
  if (Array.isArray(config)) return config.flatMap((item, index) => unreadableFiles(item, configDir, [...path, index]));
  if (typeof config !== 'object' || config === null) return [];
  return Object.entries(config).flatMap(([key, value]) => {
    const here = [...path, key];
    if (typeof value !== 'string' || value === '') return unreadableFiles(value, configDir, here);
    const file = key.endsWith('File') ? resolve(value) : DOCUMENT_KEYS.has(key) ? resolve(configDir, value) : undefined;
    if (file === undefined) return [];
    try {
      accessSync(file, constants.R_OK);
      return [];
    } catch (error) {
      return [{ path: here, problem: `${value} could not be read (${(error as NodeJS.ErrnoException).code ?? 'unreadable'})` }];
    }
  });
}
