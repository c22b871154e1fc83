// The access line written with one JSON.stringify is the line pino writes for the same fields, byte for
// byte: pino, configured as the gateway configures it, is the oracle.
import fc from 'fast-check';
import { type Level, pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { type AccessLineFields, createAccessLineWriter } from '../../../src/forks/access-line-writer.ts';
import { createLogDestination } from '../../../src/observability/log-destination.ts';
import { accessLogger, createLogger } from '../../../src/observability/logger.ts';

/** A destination that keeps what it is given. */
function capture(): { lines: string[]; write(line: string): void } {
  const lines: string[] = [];
  return { lines, write: (line) => void lines.push(line) };
}

// Characters pino escapes one way or another (quotes, backslashes, controls), and ones it writes as they
// are. Lone surrogates are left out: nothing the gateway logs can hold one (the HTTP parser reads
// latin1; names from Redis are decoded UTF-8), and pino writes them raw where JSON.stringify escapes them.
const character = fc.constantFrom('a', 'Z', '0', '/', ' ', '"', '\\', '\n', '\t', '\u0001', '\u001f', '\u007f', 'é', '€', '😀', '\u2028');
// Past 100 characters pino hands a string to JSON.stringify; below, it escapes it itself.
const text = fc.array(character, { maxLength: 130 }).map((characters) => characters.join(''));
const number = fc.oneof(fc.integer({ min: 0, max: 600 }), fc.double(), fc.constantFrom(0.001, 12.5, 1e21, Number.NaN, Number.POSITIVE_INFINITY));
const fields: fc.Arbitrary<AccessLineFields> = fc
  .record({
    reqId: text,
    trace_id: fc.stringMatching(/^[0-9a-f]{32}$/),
    span_id: fc.stringMatching(/^[0-9a-f]{16}$/),
    req: fc.record({
      method: fc.option(fc.constantFrom('GET', 'POST', 'M-SEARCH'), { nil: undefined }),
      path: text,
      remoteAddress: fc.option(text, { nil: undefined }),
    }),
    res: fc.record({ statusCode: fc.integer({ min: 100, max: 599 }) }),
    responseTime: number,
    environment: fc.constantFrom('production', 'staging'),
    operation: fc.option(text, { nil: null }),
    deprecated: fc.option(fc.constant(true as const), { nil: undefined }),
    keyId: fc.option(text, { nil: null }),
    consumer: fc.option(text, { nil: null }),
    upstreamStatus: fc.option(fc.integer({ min: 100, max: 599 }), { nil: null }),
    upstreamMs: fc.option(number, { nil: null }),
    upstream: fc.option(
      fc.record({
        upstreamFailure: fc.constantFrom('reset', 'idle_timeout', 'refused'),
        upstreamFailureDetail: fc.option(fc.record({ message: text, code: fc.option(text, { nil: undefined }) }), { nil: undefined }),
      }),
      { nil: undefined },
    ),
    errorCode: fc.option(text, { nil: null }),
  })
  // In the gateway's order: an optional field sits where the gateway puts it, or is absent.
  .map(({ deprecated, upstream, errorCode, ...rest }) => {
    const { reqId, trace_id, span_id, req, res, responseTime, environment, operation, keyId, consumer, upstreamStatus, upstreamMs } = rest;
    return {
      reqId,
      trace_id,
      span_id,
      req,
      res,
      responseTime,
      environment,
      operation,
      ...(deprecated ? { deprecated } : {}),
      keyId,
      consumer,
      upstreamStatus,
      upstreamMs,
      ...(upstream ?? {}),
      errorCode,
    } as AccessLineFields;
  });

/** A listPets request answered 200. */
const COMPLETED: AccessLineFields = {
  reqId: 'r-1',
  trace_id: '0af7651916cd43dd8448eb211c80319c',
  span_id: 'b7ad6b7169203331',
  req: { method: 'GET', path: '/v1/pets', remoteAddress: '127.0.0.1' },
  res: { statusCode: 200 },
  responseTime: 1.25,
  environment: 'production',
  operation: 'listPets',
  keyId: 'k1',
  consumer: 'acme',
  upstreamStatus: 200,
  upstreamMs: 0.5,
  errorCode: null,
};

/** The line's time is the clock's: the two loggers read it a moment apart. */
const withoutTime = (line: string | undefined) => line?.replace(/,"time":\d+,/, ',"time":0,');

describe('the access line', () => {
  it('is the line pino writes for the same fields, level and message, byte for byte', () => {
    fc.assert(
      fc.property(fields, fc.constantFrom<Level>('info', 'warn', 'error'), fc.constantFrom('request completed', 'request failed'), (entry, level, message) => {
        const written = capture();
        const oracle = capture();
        // The access log's own logger, as createAccessLog makes it: the writer against pino itself.
        createAccessLineWriter(accessLogger(createLogger('info', written)))(level, entry, message);
        accessLogger(createLogger('info', oracle))[level](entry, message);
        expect(written.lines).toHaveLength(1);
        expect(withoutTime(written.lines[0])).toBe(withoutTime(oracle.lines[0]));
      }),
      { numRuns: 500 },
    );
  });

  it('reads as pino writes it: level, time, service, the fields in order, the message', () => {
    const written = capture();
    createAccessLineWriter(createLogger('info', written))('info', COMPLETED, 'request completed');
    expect(withoutTime(written.lines[0])).toBe(
      '{"level":30,"time":0,"service":"petstore-gateway","reqId":"r-1","trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331",' +
        '"req":{"method":"GET","path":"/v1/pets","remoteAddress":"127.0.0.1"},"res":{"statusCode":200},"responseTime":1.25,"environment":"production",' +
        '"operation":"listPets","keyId":"k1","consumer":"acme","upstreamStatus":200,"upstreamMs":0.5,"errorCode":null,"msg":"request completed"}\n',
    );
  });

  // The fast path falls back to pino silently when pino changes what the writer reads (pino.symbols): the
  // oracle above still passes then, so this fails instead.
  it("is written without pino's level methods on the gateway's access logger (engaged, not handed to pino)", () => {
    const written = capture();
    const logger = accessLogger(createLogger('info', written));
    const writeLine = createAccessLineWriter(logger);
    expect(writeLine.engaged).toBe(true);
    for (const level of ['info', 'warn', 'error'] as const) {
      logger[level] = () => {
        throw new Error(`pino's ${level} was called: the access line was handed to pino`);
      };
    }
    writeLine('info', COMPLETED, 'request completed');
    writeLine('warn', { ...COMPLETED, res: { statusCode: 503 } }, 'request failed');
    expect(written.lines).toHaveLength(2);
  });

  it('is engaged on the log destination the process writes to', () => {
    const destination = createLogDestination({ fd: 1, batchBytes: 1024, maxBufferedBytes: 4096 });
    expect(createAccessLineWriter(accessLogger(createLogger('info', destination))).engaged).toBe(true);
  });

  it.each([
    ['a message prefix', { msgPrefix: '[access] ' }],
    ['a message key of its own', { messageKey: 'message' }],
    ['a mixin', { mixin: () => ({ host: 'gateway-0' }) }],
    ['a serializer for one of its fields', { serializers: { consumer: () => 'someone' } }],
    ['a log formatter', { formatters: { log: (object: Record<string, unknown>) => ({ ...object, formatted: true }) } }],
  ])('is left to pino on a logger configured with %s', (_case, options) => {
    const written = capture();
    const oracle = capture();
    const writeLine = createAccessLineWriter(pino({ ...options, timestamp: false }, written));
    expect(writeLine.engaged).toBe(false);
    writeLine('info', COMPLETED, 'request completed');
    pino({ ...options, timestamp: false }, oracle).info(COMPLETED, 'request completed');
    expect(written.lines).toEqual(oracle.lines);
  });
});
