// node bench/micro/access-log.ts: one access-log line per request, in process: pino-http's middleware (as the
// gateway used it until it went, d89926c) against the gateway's one pino call from its completion hook
// (src/observability/logger.ts), both into the gateway's own destination (src/observability/log-destination.ts)
// on /dev/null. pino-http is not a dependency: `npm i --prefix DIR pino-http@11.0.0`, then PINO_HTTP_DIR=DIR.
// Decision record 0003. Run it pinned: taskset -c 0 node bench/micro/access-log.ts
import { openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import { join } from 'node:path';
import v8 from 'node:v8';
import type { Logger } from 'pino';
import { createLogDestination } from '../../src/observability/log-destination.ts';
import { accessLogLevel, createAccessLog, createLogger } from '../../src/observability/logger.ts';
import { createRecord, type RequestRecord } from '../../src/pipeline/request-record.ts';

const { IncomingMessage, ServerResponse } = process.getBuiltinModule('node:http');
type Req = InstanceType<typeof IncomingMessage>;
type Res = InstanceType<typeof ServerResponse> & { locals: { gateway: RequestRecord } };

const ROUNDS = Math.max(3, Number(process.env.MICRO_ROUNDS ?? 7));
const CHUNKS = 250;
const CHUNK = 200;

function loadPinoHttp(): (options: object) => (req: Req, res: Res, next: () => void) => void {
  const places = [join(process.cwd(), 'package.json'), ...(process.env.PINO_HTTP_DIR ? [join(process.env.PINO_HTTP_DIR, 'package.json')] : [])];
  for (const place of places) {
    try {
      return (createRequire(place)('pino-http') as { pinoHttp: ReturnType<typeof loadPinoHttp> }).pinoHttp;
    } catch {
      // not installed there
    }
  }
  throw new Error('pino-http not found: `npm i --prefix DIR pino-http@11.0.0`, then run with PINO_HTTP_DIR=DIR');
}

/** What a request looks like by the time it completes: a listPets answered 200 for a known caller. */
const socket = new Socket();
Object.defineProperty(socket, 'remoteAddress', { value: '10.1.2.3' });
function arrive(): { req: Req; res: Res; record: RequestRecord } {
  const req = new IncomingMessage(socket);
  req.method = 'GET';
  req.url = '/v1/pets?limit=20';
  req.headers = {
    'x-request-id': 'f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
    host: 'gateway.example',
    authorization: 'Bearer pk_live_0123456789abcdef',
    'user-agent': 'bench/1.0',
    accept: 'application/json',
  };
  const res = new ServerResponse(req) as Res;
  const spanId = '00f067aa0ba902b7';
  const trace = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId, upstreamParentId: spanId, sampled: false, traceState: undefined, spans: undefined };
  const record = createRecord(req, () => trace);
  record.route = { operation: { id: 'listPets' }, pathParams: {} } as unknown as NonNullable<RequestRecord['route']>;
  record.caller = { keyId: 'k_7f3a9c', name: 'bench' } as NonNullable<RequestRecord['caller']>;
  record.upstream = { status: 200, ms: 1.237 };
  res.locals = { gateway: record };
  res.setHeader('x-request-id', record.requestId);
  return { req, res, record };
}
function complete(res: Res): void {
  res.statusCode = 200;
  res.setHeader('content-type', 'application/json');
  res.setHeader('content-length', '412');
  // As once the answer is written (no socket here): pino-http's serializer logs the status only when headersSent.
  Object.defineProperty(res, 'headersSent', { value: true });
  Object.defineProperty(res, 'writableFinished', { value: true });
  res.emit('finish');
  res.emit('close');
}

/** pino-http configured as src/observability/logger.ts had it before d89926c, reading today's record. */
function pinoHttpAccessLog(pinoHttp: ReturnType<typeof loadPinoHttp>, logger: Logger, environment: string) {
  const outcomeOf = (res: Res) => {
    const record = res.locals.gateway;
    return {
      reqId: record.requestId,
      environment,
      operation: record.route?.operation.id ?? null,
      keyId: record.caller?.keyId ?? null,
      consumer: record.caller?.name ?? null,
      upstreamMs: record.upstream?.ms ?? null,
      errorCode: record.error?.code ?? null,
    };
  };
  return pinoHttp({
    logger,
    genReqId: (_req: Req, res: Res) => res.locals.gateway.requestId,
    serializers: {
      req: (req: { method: string; url: string; raw: Req }) => ({
        method: req.method,
        path: req.url.split('?')[0],
        remoteAddress: req.raw.socket?.remoteAddress,
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    customSuccessObject: (_req: Req, res: Res, line: object) => ({ ...line, ...outcomeOf(res) }),
    customErrorObject: (_req: Req, res: Res, _error: Error, line: object) => ({ ...line, ...outcomeOf(res) }),
    customLogLevel: (_req: Req, res: Res, error?: Error) => (error ? 'error' : accessLogLevel(res.statusCode)),
    customSuccessMessage: () => 'request completed',
    customErrorMessage: () => 'request failed',
  });
}

// The gateway's process logger (redaction on) into its batching destination, on /dev/null; bytes counted.
const destination = createLogDestination({ fd: openSync('/dev/null', 'w'), batchBytes: 32 * 1024, maxBufferedBytes: 16 * 1024 * 1024 });
let bytes = 0;
let lastLine = '';
const logger = createLogger('info', {
  write(line: string) {
    bytes += line.length;
    lastLine = line;
    destination.write(line);
  },
});
const quiet = logger.child({}, { redact: { paths: [] } });
const pinoHttp = loadPinoHttp();
const gatewayLine = createAccessLog(logger, 'production');
const withPinoHttp = pinoHttpAccessLog(pinoHttp, logger, 'production');
const withPinoHttpQuiet = pinoHttpAccessLog(pinoHttp, quiet, 'production');
const next = () => undefined;

type Op = () => void;
const variants: Array<{ name: string; op: Op }> = [
  {
    name: 'no log (request objects only)',
    op() {
      const { res } = arrive();
      res.once('close', next);
      complete(res);
    },
  },
  {
    name: 'pino-http 11, as configured before',
    op() {
      const { req, res } = arrive();
      withPinoHttp(req, res, next);
      complete(res);
    },
  },
  {
    name: 'pino-http 11, redaction-free child',
    op() {
      const { req, res } = arrive();
      withPinoHttpQuiet(req, res, next);
      complete(res);
    },
  },
  {
    name: 'one pino call (gateway)',
    op() {
      const { req, res, record } = arrive();
      res.once('close', () => gatewayLine(req, res, record));
      complete(res);
    },
  },
];

interface Sample {
  cpuNs: number;
  heapBytes: number;
  lineBytes: number;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** CHUNKS × CHUNK requests, an event-loop turn between chunks (so the destination writes as it would). */
async function measure(op: Op): Promise<Sample> {
  const heapDeltas: number[] = [];
  const bytesBefore = bytes;
  // Process CPU, so the destination's writes (on libuv's threads) count too.
  const cpuBefore = process.cpuUsage();
  for (let chunk = 0; chunk < CHUNKS; chunk++) {
    const heapBefore = v8.getHeapStatistics().used_heap_size;
    for (let i = 0; i < CHUNK; i++) op();
    // A chunk during which the young generation was collected shows a drop: the median leaves those out.
    heapDeltas.push(v8.getHeapStatistics().used_heap_size - heapBefore);
    await turn();
  }
  await destination.writeAll(5000);
  const cpu = process.cpuUsage(cpuBefore);
  const ops = CHUNKS * CHUNK;
  return { cpuNs: ((cpu.user + cpu.system) * 1000) / ops, heapBytes: median(heapDeltas) / CHUNK, lineBytes: (bytes - bytesBefore) / ops };
}

const samples: Sample[][] = variants.map(() => []);
const lines: string[] = [];
for (const variant of variants) {
  lastLine = '';
  await measure(variant.op); // warm-up
  lines.push(lastLine.trim());
}
for (let round = 0; round < ROUNDS; round++) {
  for (const [index, variant] of variants.entries()) samples[index]!.push(await measure(variant.op));
  process.stderr.write(`round ${round + 1}/${ROUNDS}\n`);
}

const rows = samples.map((runs) => ({
  cpu: median(runs.map((run) => run.cpuNs)),
  heap: median(runs.map((run) => run.heapBytes)),
  line: median(runs.map((run) => run.lineBytes)),
}));
const base = rows[0]!;
const gateway = rows.at(-1)!;
const width = Math.max(...variants.map((variant) => variant.name.length));
process.stdout.write(
  `Access log, ${CHUNKS * CHUNK} requests per run, ${ROUNDS} rounds in turn, medians (node ${process.version}); ` +
    `"added": less the no-log row; heap: V8 heap bytes allocated per request\n` +
    `${'variant'.padEnd(width)}  CPU ns/req  added  ×gateway  heap B/req  added  ×gateway  line B\n`,
);
for (const [index, row] of rows.entries()) {
  const addedCpu = row.cpu - base.cpu;
  const addedHeap = row.heap - base.heap;
  const first = index === 0;
  process.stdout.write(
    [
      variants[index]!.name.padEnd(width),
      row.cpu.toFixed(0).padStart(11),
      (first ? '-' : addedCpu.toFixed(0)).padStart(6),
      (first ? '-' : (addedCpu / (gateway.cpu - base.cpu)).toFixed(2)).padStart(9),
      row.heap.toFixed(0).padStart(11),
      (first ? '-' : addedHeap.toFixed(0)).padStart(6),
      (first ? '-' : (addedHeap / (gateway.heap - base.heap)).toFixed(2)).padStart(9),
      row.line.toFixed(0).padStart(7),
    ].join(' ') + '\n',
  );
}
process.stdout.write(
  `\nThe lines written:\n${lines
    .slice(1)
    .map((line, index) => `${variants[index + 1]!.name}: ${line}`)
    .join('\n')}\n`,
);
