// node bench/micro/express-shell.ts: what Express costs around the pipeline. The same answer from bare node:http,
// from Express 5 with it as one layer, with seven pass-through stages before it as seven more layers of the
// app's router, and with the same eight stages run by the gateway's inOrder as one layer (src/app.ts):
// over the network, then in process (no sockets: the differences of a few µs stand out of the noise).
// Decision record 0006. Environment: MICRO_ROUNDS, MICRO_DURATION_S, MICRO_CONNECTIONS, MICRO_RATE.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';

const VARIANTS = {
  bare: 'node:http',
  'one-layer': 'Express, app.use(handler)',
  'eight-layers': 'Express, 7 app.use(stage) + handler',
  'in-order': 'Express, app.use(inOrder(7 + handler))',
} as const;
type Variant = keyof typeof VARIANTS;
const STAGES = 7;

/** listPets' answer as the bench backend gives it, built once: the cost measured is the shell's. */
const BODY = Buffer.from(
  JSON.stringify([
    { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
    { id: 2, name: 'Mittens', categoryId: 2, status: 'pending' },
  ]),
);
function answer(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': BODY.length });
  res.end(BODY);
}

/** Stages that decide nothing: each only hands on, so what is measured is how they are strung together. */
const stages: RequestHandler[] = Array.from({ length: STAGES }, (_, index) => {
  const stage = (_req: Request, res: Response, next: NextFunction): void => {
    res.locals[`stage${index}`] = true;
    next();
  };
  return stage;
});

/** The listener a variant puts behind node:http. */
async function listenerFor(variant: Variant): Promise<RequestListener> {
  if (variant === 'bare') return answer;
  const { default: express } = await import('express');
  const { inOrder } = (await import(new URL('../../dist/pipeline/in-order.js', import.meta.url).href)) as typeof import('../../src/pipeline/in-order.ts');
  const app = express();
  // As createApp sets it up.
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  if (variant === 'one-layer') app.use(answer);
  if (variant === 'eight-layers') for (const stage of [...stages, answer]) app.use(stage);
  if (variant === 'in-order') app.use(inOrder([...stages, answer]));
  return app;
}

async function serve(variant: Variant): Promise<void> {
  const http = process.getBuiltinModule('node:http');
  const server = http.createServer({ keepAliveTimeout: 60_000 }, await listenerFor(variant));
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
  });
}

/**
 * The shell alone, without sockets or the load generator's noise: each variant's listener called with a
 * node:http request and response (the answer is buffered, never written), CPU and V8 heap allocated per
 * request, the variants in turn, medians.
 */
async function inProcess(): Promise<void> {
  const { IncomingMessage, ServerResponse } = process.getBuiltinModule('node:http');
  const { Socket } = process.getBuiltinModule('node:net');
  const v8 = process.getBuiltinModule('node:v8');
  const socket = new Socket();
  const listeners = await Promise.all((Object.keys(VARIANTS) as Variant[]).map(listenerFor));
  const request = (listener: RequestListener) => {
    const req = new IncomingMessage(socket);
    req.method = 'GET';
    req.url = '/v1/pets?limit=20';
    req.headers = { host: 'gateway.example', accept: 'application/json' };
    const res = new ServerResponse(req);
    // The request tracker makes res.locals before Express sees the response (src/pipeline/request-tracker.ts).
    (res as ServerResponse & { locals: object }).locals = {};
    listener(req, res);
  };
  const CHUNK = 100;
  const CHUNKS = 500;
  const measure = (listener: RequestListener) => {
    const heap: number[] = [];
    const before = process.cpuUsage();
    for (let chunk = 0; chunk < CHUNKS; chunk++) {
      const used = v8.getHeapStatistics().used_heap_size;
      for (let i = 0; i < CHUNK; i++) request(listener);
      // A chunk during which the young generation was collected shows a drop: the median leaves those out.
      heap.push(v8.getHeapStatistics().used_heap_size - used);
    }
    const cpu = process.cpuUsage(before);
    return { ns: ((cpu.user + cpu.system) * 1000) / (CHUNK * CHUNKS), bytes: median(heap) / CHUNK };
  };
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const rounds = Math.max(3, Number(process.env.MICRO_ROUNDS ?? 5)) + 2;
  for (const listener of listeners) measure(listener); // warm-up
  const samples = listeners.map((): Array<{ ns: number; bytes: number }> => []);
  for (let round = 0; round < rounds; round++) for (const [index, listener] of listeners.entries()) samples[index]!.push(measure(listener));
  const rows = samples.map((runs) => ({ ns: median(runs.map((run) => run.ns)), bytes: median(runs.map((run) => run.bytes)) }));
  const names = Object.values(VARIANTS);
  const width = Math.max(...names.map((name) => name.length));
  const lines = [
    `In process, no sockets (${CHUNK * CHUNKS} requests per run, ${rounds} rounds in turn, medians): CPU and V8 heap allocated per request`,
    `${'variant'.padEnd(width)}  CPU ns/req  added  heap B/req  added`,
    ...rows.map((row, index) =>
      [
        names[index]!.padEnd(width),
        row.ns.toFixed(0).padStart(11),
        (index === 0 ? '-' : `+${(row.ns - rows[0]!.ns).toFixed(0)}`).padStart(6),
        row.bytes.toFixed(0).padStart(11),
        (index === 0 ? '-' : `+${(row.bytes - rows[0]!.bytes).toFixed(0)}`).padStart(6),
      ].join(' '),
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function main(): Promise<void> {
  const { execFileSync } = await import('node:child_process');
  const { buildGateway } = await import('../../support/start-gateway-process.ts');
  const { header, rounds, startServer, table, NODE_FLAGS, SERVER_CPU } = await import('./load.ts');
  buildGateway(); // inOrder as production runs it: dist/
  const self = fileURLToPath(import.meta.url);
  const inProcessTable = execFileSync('taskset', ['-c', SERVER_CPU, process.execPath, ...NODE_FLAGS, self, 'in-process'], { encoding: 'utf8' });
  const targets = [];
  for (const [variant, name] of Object.entries(VARIANTS)) {
    const server = await startServer([self, 'serve', variant]);
    targets.push({ name, url: `http://127.0.0.1:${server.port}/v1/pets?limit=20`, pid: server.pid });
  }
  const runs = await rounds(targets);
  process.stdout.write(
    `${header(`A fixed ${BODY.length}-byte JSON answer; ${STAGES} stages that only call next()`)}\n${table(targets, runs)}\n${inProcessTable}`,
  );
  process.exit(0);
}

if (process.argv[2] === 'serve') await serve(process.argv[3] as Variant);
else if (process.argv[2] === 'in-process') await inProcess();
else await main();
