// node bench/micro/proxy-leg.ts: the proxy leg alone, GET /v1/pets?limit=20 forwarded to the bench backend by a
// node:http server through http-proxy-middleware, node:http's own client, or the gateway's exchange (undici's
// Pool, from dist/; once more with undici's whole index loaded, as `import { Pool } from 'undici'` would).
// Decision records 0002 and 0004. Environment: MICRO_ROUNDS, MICRO_DURATION_S, MICRO_CONNECTIONS, MICRO_RATE.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';

const VARIANTS = {
  'http-proxy-middleware': 'http-proxy-middleware',
  'node-http': 'node:http client, piped',
  undici: 'exchange (undici Pool)',
  'undici-index': 'exchange, undici index loaded',
} as const;
type Variant = keyof typeof VARIANTS;

/** The server under test: one node:http listener, one way to forward. */
async function serve(variant: Variant, origin: string): Promise<void> {
  // As the gateway does (src/http/node-http.ts): an ESM import of node:http would load Node's bundled undici.
  const http = process.getBuiltinModule('node:http');
  const target = new URL(origin);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  let listener: RequestListener;
  if (variant === 'http-proxy-middleware') {
    const { createProxyMiddleware } = await import('http-proxy-middleware');
    const proxy = createProxyMiddleware<IncomingMessage, ServerResponse>({ target: origin, changeOrigin: true, agent });
    listener = (req, res) => void proxy(req, res, () => res.writeHead(404).end());
  } else if (variant === 'node-http') {
    listener = (req, res) => {
      const headers = { ...req.headers, host: target.host };
      const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
    };
  } else {
    // The public entry's state: undici's index loaded, its API mixed into Dispatcher.prototype; the Pool is the same class.
    if (variant === 'undici-index') await import('undici');
    const root = new URL('../../', import.meta.url);
    const { createUpstream } = (await import(new URL('dist/proxy/exchange.js', root).href)) as typeof import('../../src/proxy/exchange.ts');
    const upstream = createUpstream({ baseUrl: `${origin}/v1`, idleTimeoutMs: 10_000, connectTimeoutMs: 2000, totalTimeoutMs: 30_000, maxSockets: 256 });
    const everyName = { has: () => true } as unknown as ReadonlySet<string>;
    const relay = { relayedFor: () => everyName, secret: undefined, onDropped: () => undefined };
    listener = (req, res) => {
      const request = {
        method: req.method!,
        path: req.url!.slice('/v1'.length),
        headers: { ...req.headers, host: upstream.host },
        body: undefined,
        relay,
        check: undefined,
      };
      upstream.exchange(request, res).catch(() => res.writeHead(502).end());
    };
  }
  const server = http.createServer({ keepAliveTimeout: 60_000 }, listener);
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
  });
}

async function main(): Promise<void> {
  const { buildGateway } = await import('../../support/start-gateway-process.ts');
  const { header, rounds, startServer, table } = await import('./load.ts');
  buildGateway(); // the exchange as production runs it: dist/
  const self = fileURLToPath(import.meta.url);
  const backend = await startServer(['bench/backend.ts', '0']);
  const origin = `http://127.0.0.1:${backend.port}`;
  const targets = [];
  for (const [variant, name] of Object.entries(VARIANTS)) {
    const server = await startServer([self, 'serve', variant, origin]);
    targets.push({ name, url: `http://127.0.0.1:${server.port}/v1/pets?limit=20`, pid: server.pid });
  }
  const runs = await rounds(targets);
  process.stdout.write(
    `${header("GET /v1/pets?limit=20 through a node:http server to the bench backend (backend on the servers' CPU too)")}\n${table(targets, runs)}`,
  );
  process.exit(0);
}

if (process.argv[2] === 'serve') await serve(process.argv[3] as Variant, process.argv[4]!);
else await main();
