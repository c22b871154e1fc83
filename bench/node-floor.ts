// The Node floor: what Node itself costs to proxy a request. node:http in front, undici's Pool.stream behind
// (the gateway's own client, the same pool size), no framework and no features: no authentication, no
// validation, no limits, no logs, no metrics. Hop-by-hop headers are dropped both ways, as any proxy must.
//   node bench/node-floor.ts <upstream origin> <port>
import { createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { Writable } from 'node:stream';
import { Pool } from 'undici';

const [target = '', port = '0'] = process.argv.slice(2);
const pool = new Pool(target, { connections: 256 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host']);

function endToEnd(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): OutgoingHttpHeaders {
  const kept: OutgoingHttpHeaders = {};
  for (const name in headers) if (!HOP_BY_HOP.has(name)) kept[name] = headers[name];
  return kept;
}

const server = createServer((req, res) => {
  const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
  pool.stream(
    {
      path: req.url ?? '/',
      method: req.method as 'GET',
      headers: endToEnd(req.headers) as Record<string, string>,
      ...(hasBody ? { body: req } : {}),
    },
    ({ statusCode, headers }) => {
      res.writeHead(statusCode, endToEnd(headers));
      return res as unknown as Writable;
    },
    (error) => {
      if (error === null) return;
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
      else res.destroy();
    },
  );
});
server.keepAliveTimeout = 65_000;
server.listen(Number(port), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
// An orderly exit on a signal, so that --cpu-prof writes its profile.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
