// The process logger and the one-line-per-request access log; neither ever sees a credential nor a Redis command's arguments.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { completedStatus, type RequestRecord } from '../pipeline/request-record.ts';
import { serializeError } from './error-serializer.ts';
import { pino, type DestinationStream, type Level, type Logger, type LevelWithSilent } from 'pino';

/**
 * Headers are never logged (the Authorization header carries the key); redaction is the second line
 * of defence for anything that logs a request or headers object by mistake.
 */
const REDACT = ['authorization', 'headers.authorization', 'req.headers.authorization', 'req.headers.cookie', 'apiKey', 'key', 'secret', 'pepper'];

/**
 * pino's own timestamp is `,"time":${Date.now()}`. V8 turns a number into its decimal string through a
 * cache held in the old generation, so every new number's string is kept there until its slot is
 * reused, outlives the young generation and is promoted: a new one per millisecond, one per line at
 * 1,000 requests/s. `toFixed` writes the same digits without the cache.
 */
const epochTime = (): string => `,"time":${Date.now().toFixed(0)}`;

/** The process logger. Errors are written by serializeError: pino's serializer without Redis commands' arguments. */
export function createLogger(level: LevelWithSilent, destination?: DestinationStream): Logger {
  const options = {
    level,
    redact: { paths: REDACT, censor: '[redacted]' },
    serializers: { err: serializeError },
    base: { service: 'petstore-gateway' },
    timestamp: epochTime,
  };
  return destination ? pino(options, destination) : pino(options);
}

/** Answers the gateway gives on purpose when the backend or Redis fails, or it is at capacity: not gateway bugs. */
const DECIDED_REFUSALS: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * The access log line's level: warn for the 502/503/504 refusals the gateway decides (an operator
 * watches their rate, nobody debugs one), error for 500 and any other 5xx (a bug), info otherwise.
 */
export function accessLogLevel(statusCode: number): Level {
  if (DECIDED_REFUSALS.has(statusCode)) return 'warn';
  return statusCode >= 500 ? 'error' : 'info';
}

/**
 * Durations to the microsecond. A full-precision double is a new number on every line and its string
 * is promoted (see epochTime); rounded, the same few thousand values recur, and a recurring number's
 * string comes from V8's cache without a new one.
 */
const toMicroseconds = (ms: number): number => Math.round(ms * 1000) / 1000;

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
  upstreamFailureDetail?: NonNullable<RequestRecord['upstream']>['failureDetail'];
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
  errorCode: true,
} satisfies Record<keyof AccessLineFields, true>);

/**
 * Whether pino writes a line as level, time, bindings, the object's fields and "msg" and nothing else:
 * true for the gateway's loggers. A logger configured to do more (a message key or prefix, a mixin, a
 * nested key, a log formatter, hooks, serializers for the line's fields, a destination that asks for
 * each line's level, as pino.multistream does) is left to pino.
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

/**
 * Writes an access line to `logger`'s destination as `logger[level](fields, message)` would, byte for
 * byte, with one JSON.stringify of the fields: pino escapes every key and every string value one at a
 * time, and in the gateway that cost as much as the rest of the access log (decision 0011). The level's
 * opening, the time, the bindings and the line's end are pino's own, read from the logger; a logger
 * configured to write more than those (see writesPlainLines) is handed the call.
 * test/unit/observability/access-line.test.ts holds the line to pino's output.
 */
export function createAccessLineWriter(logger: Logger): (level: Level, fields: AccessLineFields, message: string) => void {
  if (!writesPlainLines(logger)) return (level, fields, message) => logger[level](fields, message);
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
  return (level, fields, message) => {
    let ending = endings.get(message);
    if (ending === undefined) {
      ending = `,"msg":${JSON.stringify(message)}${end}`;
      if (endings.size < 8) endings.set(message, ending);
    }
    const json = JSON.stringify(fields);
    stream.write(`${openings[levels[level]!]}${time.call(logger)}${bindings},${json.slice(1, -1)}${ending}`);
  };
}

/** The logger access lines go through: the process logger without redaction (the line carries no headers object to redact). */
export function accessLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: [] } });
}

/**
 * One JSON line per request: request id, trace and span ids (W3C, the names OpenTelemetry's log data model uses), operation, status, durations, the consumer (key id and
 * name, never the key). The query string is left out: a client may put a secret there by mistake.
 * No child logger, serializer or wrapper per request.
 */
export function createAccessLog(logger: Logger, environment: string): (req: IncomingMessage, res: ServerResponse, record: RequestRecord) => void {
  // The line is built field by field from the record, never from a headers object: redaction would
  // find nothing in it, and none is applied.
  const accessLog = accessLogger(logger);
  const writeLine = createAccessLineWriter(accessLog);
  return function logRequest(req, res, record) {
    const statusCode = completedStatus(res, record);
    const level = accessLogLevel(statusCode);
    if (!accessLog.isLevelEnabled(level)) return;
    const operation = record.route?.operation;
    writeLine(
      level,
      {
        reqId: record.requestId,
        trace_id: record.trace.traceId,
        span_id: record.trace.spanId,
        req: { method: req.method, path: record.path, remoteAddress: req.socket.remoteAddress },
        res: { statusCode },
        responseTime: toMicroseconds(Number(process.hrtime.bigint() - record.startedAt) / 1e6),
        environment,
        operation: operation?.id ?? null,
        ...(operation?.deprecation ? { deprecated: true as const } : {}),
        keyId: record.caller?.keyId ?? null,
        consumer: record.caller?.name ?? null,
        upstreamStatus: record.upstream?.status || null,
        upstreamMs: record.upstream?.ms === undefined ? null : toMicroseconds(record.upstream.ms),
        ...(record.upstream?.failure ? { upstreamFailure: record.upstream.failure, upstreamFailureDetail: record.upstream.failureDetail } : {}),
        errorCode: record.error?.code ?? null,
      },
      statusCode >= 400 ? 'request failed' : 'request completed',
    );
  };
}
