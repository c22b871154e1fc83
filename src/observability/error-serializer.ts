// The logger's err serializer: pino's own, without the arguments of a Redis command anywhere in the error it writes.
import { pino } from 'pino';

/**
 * ioredis puts the command an error answers on the error, `command: { name, args }` (a reply error, an
 * aborted command; each error of a failed transaction's `previousErrors`), and pino's err serializer
 * copies an error's enumerable properties. The args are the command's keys and values: a key's stored
 * hash, its id, a consumer's name, a whole key record. The name says which command failed, which is
 * what an operator needs; the arguments are never written.
 */
interface LoggedCommand {
  name?: string;
}

const probe: unknown = Object.getPrototypeOf(pino.stdSerializers.err(new Error('probe')));
/**
 * The prototype of what pino's serializer returns (pino-std-serializers' own), which tells its output,
 * a fresh object per error and safe to rewrite in place, from the caller's objects, which are copied.
 * Were pino to return plain objects, they would be copied and scrubbed like the caller's; the oracle
 * test (test/unit/observability/error-serializer.test.ts) would then show what changed in pino's format.
 */
const SERIALIZED_ERROR: object | undefined = probe === Object.prototype || probe === null ? undefined : (probe as object);

/**
 * Walked no deeper than this (pino itself writes objects 5 levels deep at most). An error's graph is
 * built by libraries: a cycle or a deep one must cost a bounded walk, not a stack overflow.
 */
const MAX_DEPTH = 16;

function isErrorLike(value: unknown): value is Error {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}

function commandName(command: unknown): LoggedCommand | undefined {
  if (typeof command !== 'object' || command === null) return undefined;
  const name = (command as { name?: unknown }).name;
  return typeof name === 'string' ? { name } : {};
}

/**
 * A copy of `value` without any `command`'s arguments: serialized errors are rewritten in place (pino made
 * them for this call), errors met in arrays or plain objects are serialized first (JSON would otherwise
 * write their enumerable properties as they are), plain objects and arrays are copied, never changed.
 */
function scrub(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value)) return '[Circular]';
  if (depth > MAX_DEPTH) return '[Deep]';
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => scrub(item, depth + 1, seen));
    const prototype = Object.getPrototypeOf(value);
    if (SERIALIZED_ERROR !== undefined && prototype === SERIALIZED_ERROR)
      return scrubFields(value as Record<string, unknown>, value as Record<string, unknown>, depth, seen);
    if (isErrorLike(value)) return scrub(pino.stdSerializers.err(value), depth, seen);
    // Buffers, dates, maps and the like are written as JSON writes them: they hold no command of their own.
    if (prototype !== Object.prototype && prototype !== null) return value;
    return scrubFields(value as Record<string, unknown>, {}, depth, seen);
  } finally {
    seen.delete(value);
  }
}

function scrubFields(from: Record<string, unknown>, into: Record<string, unknown>, depth: number, seen: WeakSet<object>): Record<string, unknown> {
  for (const key of Object.keys(from)) {
    into[key] = key === 'command' && typeof from[key] === 'object' ? commandName(from[key]) : scrub(from[key], depth + 1, seen);
  }
  return into;
}

/**
 * pino's err serializer (type, message and stack with their causes', aggregated errors, the error's own
 * fields), then every `command` in what it wrote reduced to its name. A cause's fields are never written
 * by pino (only its message and stack, which hold no arguments); a cause that is not an error is a field
 * like another, and is scrubbed like one.
 */
export function serializeError(err: unknown): unknown {
  return scrub(isErrorLike(err) ? pino.stdSerializers.err(err) : err, 0, new WeakSet());
}
