// The process logger and the one-line-per-request access log; neither ever sees a credential nor a Redis command's arguments.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { completedStatus, type RequestRecord } from '../pipeline/request-record.ts';
import { createAccessLineWriter, type AccessLineFields } from '../forks/access-line-writer.ts';
import type { ContractViolation } from '../contract/check-answer.ts';
import { serializeError } from './error-serializer.ts';
import { pino, type DestinationStream, type Level, type Logger, type LevelWithSilent } from 'pino';

/** Headers are never logged (Authorization carries the key); redaction guards against logging one by mistake. */
const REDACT = ['authorization', 'headers.authorization', 'req.headers.authorization', 'req.headers.cookie', 'apiKey', 'key', 'secret', 'pepper'];

/**
 * pino's own timestamp is `,"time":${Date.now()}`: V8 caches a number's string in the old generation, so a new one
 * per millisecond is promoted. `toFixed` writes the same digits without the cache.
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

/** warn for the 502/503/504 the gateway decides (an operator watches their rate), error for other 5xx (a bug), else info. */
export function accessLogLevel(statusCode: number): Level {
  if (DECIDED_REFUSALS.has(statusCode)) return 'warn';
  return statusCode >= 500 ? 'error' : 'info';
}

/** Durations to the microsecond: rounded, values recur and their strings come from V8's cache (see epochTime). */
const toMicroseconds = (ms: number): number => Math.round(ms * 1000) / 1000;

/** The logger access lines go through: the process logger without redaction (the line carries no headers object to redact). */
export function accessLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: [] } });
}

/**
 * One JSON line per request, built field by field from the record (so no redaction): ids (trace and span under
 * OpenTelemetry's log names), operation, status, durations, the consumer, never the key. No query string: it may hold a secret.
 */
export function createAccessLog(logger: Logger, environment: string): (req: IncomingMessage, res: ServerResponse, record: RequestRecord) => void {
  const accessLog = accessLogger(logger);
  const writeLine = createAccessLineWriter(accessLog);
  return function logRequest(req, res, record) {
    const statusCode = completedStatus(res, record);
    const level = accessLogLevel(statusCode);
    if (!accessLog.isLevelEnabled(level)) return;
    const operation = record.route?.operation;
    const contract = record.upstream?.contract;
    const broken = contract?.result === 'violation' ? contract : undefined;
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
        ...(broken ? { contractViolation: violationFields(broken.violation, broken.enforced) } : {}),
        errorCode: record.error?.code ?? null,
      },
      statusCode >= 400 ? 'request failed' : 'request completed',
    );
  };
}

/** The log's account of a contract violation, in a fixed field order. */
function violationFields(violation: ContractViolation, enforced: boolean): NonNullable<AccessLineFields['contractViolation']> {
  const { kind, response, pointer, keyword, header } = violation;
  return { kind, response: response ?? null, pointer, keyword, ...(header === undefined ? {} : { header }), enforced };
}
