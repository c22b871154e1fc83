// The process logger and the one-line-per-request access log; neither ever sees a credential nor a Redis command's arguments.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { completedStatus, type RequestRecord } from '../pipeline/request-record.ts';
import { createAccessLineWriter } from './access-line-writer.ts';
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
