// The process logger and the one-line-per-request access log; neither ever sees a credential.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler, Response } from 'express';
import { pino, type DestinationStream, type Level, type Logger, type LevelWithSilent } from 'pino';
import { pinoHttp } from 'pino-http';

/**
 * Headers are never logged (the Authorization header carries the key); redaction is the second line
 * of defence for anything that logs a request or headers object by mistake.
 */
const REDACT = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'apiKey',
  'key',
  'secret',
  'pepper',
];

export function createLogger(level: LevelWithSilent, destination?: DestinationStream): Logger {
  const options = { level, redact: { paths: REDACT, censor: '[redacted]' }, base: { service: 'petstore-gateway' } };
  return destination ? pino(options, destination) : pino(options);
}

function outcomeOf(res: Response, environment: string): Record<string, unknown> {
  const context = res.locals.gateway;
  return {
    reqId: context.requestId,
    environment,
    operation: context.operation?.id ?? null,
    ...(context.operation?.deprecation ? { deprecated: true } : {}),
    keyId: context.consumer?.keyId ?? null,
    consumer: context.consumer?.name ?? null,
    upstreamMs: context.upstreamMs ?? null,
    errorCode: context.error?.code ?? null,
  };
}

/** Answers the gateway gives on purpose when the backend or Redis fails, or it is at capacity: not gateway bugs. */
const DECIDED_REFUSALS: ReadonlySet<number> = new Set([502, 503, 504]);

/**
 * The access log line's level: warn for the 502/503/504 refusals the gateway decides (an operator
 * watches their rate, nobody debugs one), error for 500 and any other 5xx (a bug), info otherwise.
 */
export function accessLogLevel(statusCode: number, error?: Error): Level {
  if (error) return 'error';
  if (DECIDED_REFUSALS.has(statusCode)) return 'warn';
  return statusCode >= 500 ? 'error' : 'info';
}

function pathOf(url: string | undefined): string {
  const query = url?.indexOf('?') ?? -1;
  return url === undefined ? '' : query === -1 ? url : url.slice(0, query);
}

/**
 * One JSON line per request: request id, operation, status, durations, the consumer (key id and
 * name, never the key). The query string is left out: a client may put a secret there by mistake.
 */
export function createAccessLog(logger: Logger, environment: string): RequestHandler {
  const middleware = pinoHttp({
    logger,
    // One child logger per request (pino-http's default); quietReqLogger would add a second.
    genReqId: (_req: IncomingMessage, res: ServerResponse) => (res as Response).locals.gateway.requestId,
    serializers: {
      req: (req: { method: string; url: string; raw: IncomingMessage }) => ({
        method: req.method,
        path: pathOf((req.raw as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url),
        remoteAddress: req.raw.socket?.remoteAddress,
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    // Added once, when the response is done: the operation and consumer are known only by then.
    customSuccessObject: (_req: IncomingMessage, res: ServerResponse, line: object) => ({ ...line, ...outcomeOf(res as Response, environment) }),
    // pino-http attaches an `err` (with a stack) to every 5xx line. For a decided refusal that stack
    // locates nothing, and errorCode already says what happened, so the line goes without it.
    customErrorObject: (_req: IncomingMessage, res: ServerResponse, _error: Error, line: object) => {
      const { err, ...rest } = line as { err?: unknown };
      return { ...(accessLogLevel(res.statusCode) === 'warn' ? rest : line), ...outcomeOf(res as Response, environment) };
    },
    customLogLevel: (_req: IncomingMessage, res: ServerResponse, error?: Error) => accessLogLevel(res.statusCode, error),
    customSuccessMessage: () => 'request completed',
    customErrorMessage: () => 'request failed',
  });
  return middleware as unknown as RequestHandler;
}
