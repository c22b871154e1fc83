// The access line written to a pino logger's destination with one JSON.stringify, as pino would write it
// (decision 0011): the one module that reads pino's internals (`pino.symbols`). Relies on pino 10.4.0
// exactly (package.json pins it). Oracle: test/unit/forks/access-line.test.ts holds the line to
// pino's own; the same file's engaged test fails when the gateway's logger is handed back to pino.
import type { Level, Logger } from 'pino';
import { pino } from 'pino';

/** What an access line says beside pino's level, time, bindings and message, in the order it says it. */
export interface AccessLineFields {
  reqId: string;
  trace_id: string;
  span_id: string;
  req: { method: string | undefined; path: string; remoteAddress: string | undefined };
  res: { statusCode: number };
  responseTime: number;
  environment: string;
  operation: string | null;
  deprecated?: true;
  keyId: string | null;
  consumer: string | null;
  upstreamStatus: number | null;
  upstreamMs: number | null;
  upstreamFailure?: string;
  upstreamFailureDetail?: { message: string; code?: string };
  /** The first rule the backend's answer broke, when it was checked and broke one: where and which rule, never a value. */
  contractViolation?: { kind: string; response: string | null; pointer: string; keyword: string; header?: string; enforced: boolean };
  errorCode: string | null;
}

/** The line writer's view of a pino logger: its state under `pino.symbols`. */
interface PinoLineParts {
  [key: symbol]: unknown;
}

/** The access line's top-level fields, which no serializer of the logger's may claim. */
const LINE_FIELDS = Object.keys({
  reqId: true,
  trace_id: true,
  span_id: true,
  req: true,
  res: true,
  responseTime: true,
  environment: true,
  operation: true,
  deprecated: true,
  keyId: true,
  consumer: true,
  upstreamStatus: true,
  upstreamMs: true,
  upstreamFailure: true,
  upstreamFailureDetail: true,
  contractViolation: true,
  errorCode: true,
} satisfies Record<keyof AccessLineFields, true>);

/**
 * Whether pino writes only level, time, bindings, fields and "msg" (the gateway's loggers). A logger that does more
 * (message key or prefix, mixin, nested key, formatter, hooks, field serializers, pino.multistream) is left to pino.
 */
function writesPlainLines(logger: Logger): boolean {
  const parts = logger as unknown as PinoLineParts;
  const symbols = pino.symbols;
  const formatters = parts[symbols.formattersSym] as { log?: unknown };
  const hooks = parts[symbols.hooksSym] as { logMethod?: unknown; streamWrite?: unknown };
  const serializers = parts[symbols.serializersSym] as Record<string, unknown>;
  const stream = parts[symbols.streamSym] as Record<symbol, unknown>;
  return (
    parts[symbols.messageKeySym] === 'msg' &&
    parts[symbols.mixinSym] === undefined &&
    !parts[symbols.nestedKeySym] &&
    // pino's declarations omit msgPrefixSym, which it exports beside the others.
    parts[(symbols as unknown as Record<string, symbol>).msgPrefixSym!] === undefined &&
    formatters.log === undefined &&
    hooks.logMethod === undefined &&
    hooks.streamWrite === undefined &&
    !LINE_FIELDS.some((field) => serializers[field] !== undefined) &&
    stream[Symbol.for('pino.metadata')] !== true
  );
}

/** Writes one access line; `engaged` says whether it is written here (true) or handed to pino (false). */
export interface AccessLineWriter {
  (level: Level, fields: AccessLineFields, message: string): void;
  readonly engaged: boolean;
}

/**
 * Writes `logger[level](fields, message)`'s line byte for byte with one JSON.stringify: pino escapes each key and
 * string apart, which cost as much as the rest of the access log (decision 0011). Level, time, bindings and line end
 * are read from the logger; one that writes more (writesPlainLines) is handed the call.
 */
export function createAccessLineWriter(logger: Logger): AccessLineWriter {
  if (!writesPlainLines(logger)) {
    const handedToPino = (level: Level, fields: AccessLineFields, message: string) => logger[level](fields, message);
    return Object.assign(handedToPino, { engaged: false });
  }
  const parts = logger as unknown as PinoLineParts;
  const { lsCacheSym, timeSym, chindingsSym, endSym, streamSym } = pino.symbols;
  const openings = parts[lsCacheSym] as Readonly<Record<number, string>>;
  const time = parts[timeSym] as () => string;
  const bindings = parts[chindingsSym] as string;
  const end = parts[endSym] as string;
  const stream = parts[streamSym] as { write(line: string): unknown };
  const levels = logger.levels.values;
  // The line's end for each message, made once: the access log has two messages.
  const endings = new Map<string, string>();
  const write = (level: Level, fields: AccessLineFields, message: string) => {
    let ending = endings.get(message);
    if (ending === undefined) {
      ending = `,"msg":${JSON.stringify(message)}${end}`;
      if (endings.size < 8) endings.set(message, ending);
    }
    const json = JSON.stringify(fields);
    stream.write(`${openings[levels[level]!]}${time.call(logger)}${bindings},${json.slice(1, -1)}${ending}`);
  };
  return Object.assign(write, { engaged: true });
}
