// The logger's err serializer: pino's own, without the arguments of a Redis command anywhere in the error it writes.
import { pino } from 'pino';

/**
 * ioredis puts `command: { name, args }` on its errors (and each of a failed transaction's `previousErrors`), which
 * pino's serializer copies. The args are keys and values (a key's hash, a whole key record): only the name is written.
 */
interface LoggedCommand {
  name?: string;
}

const probe: unknown = Object.getPrototypeOf(pino.stdSerializers.err(new Error('probe')));
/**
 * The prototype of pino's serialized errors: tells its fresh output (rewritten in place) from the caller's objects (copied).
 * Were pino to return plain objects they would be copied too; the oracle test would show what changed.
 */
const SERIALIZED_ERROR: object | undefined = probe === Object.prototype || probe === null ? undefined : (probe as object);

/** Pino writes 5 levels at most; an error's graph is built by libraries, so a deep one must not overflow the stack. */
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
 * `value` without any `command`'s arguments: serialized errors rewritten in place, errors met inside serialized first
 * (JSON would write their enumerable properties as they are), plain objects and arrays copied, never changed.
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
 * pino's err serializer, then every `command` in what it wrote reduced to its name. pino writes only a cause's message
 * and stack (no arguments); a cause that is not an error is scrubbed like any field.
 */
export function serializeError(err: unknown): unknown {
  return scrub(isErrorLike(err) ? pino.stdSerializers.err(err) : err, 0, new WeakSet());
}
