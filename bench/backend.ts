// Benchmark upstream: the sample pet store on a given port, in its own process.
//   BENCH_BACKEND_PETS=<n>: a store of n animals instead of the sample's four (pages of limit=100 need 100).
//   BENCH_BACKEND_TLS_CERT_FILE, BENCH_BACKEND_TLS_KEY_FILE and BENCH_BACKEND_TLS_CA_FILE: the store over HTTPS, demanding
//   a client certificate issued by that CA (mutual TLS: a proxy without one is refused in the handshake). It then also
//   answers GET /bench-stats with the TLS connections it accepted, by protocol and cipher, and the requests it served.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import { startSampleBackend, type Pet } from '../src/demo/sample-backend.ts';

const STATUSES = ['available', 'pending', 'sold'] as const;
const count = Number(process.env.BENCH_BACKEND_PETS ?? 0);
const pets: Pet[] = Array.from({ length: count }, (_, index) => ({
  id: index + 1,
  name: `Pet ${index + 1}`,
  categoryId: (index % 7) + 1,
  status: STATUSES[index % STATUSES.length]!,
}));
const port = Number(process.argv[2] ?? 0);
const certFile = process.env.BENCH_BACKEND_TLS_CERT_FILE;

if (certFile === undefined) {
  const backend = await startSampleBackend({ port, ...(count > 0 ? { pets } : {}) });
  process.stdout.write(`${JSON.stringify({ port: backend.port })}\n`);
} else {
  // The sample store builds its own node:http server; its request handler is served here by a node:https one instead,
  // so that the TLS backend answers exactly what the plain one does (the plain server is closed before any request).
  const sample = await startSampleBackend({ port: 0, ...(count > 0 ? { pets } : {}) });
  const handler = sample.server.listeners('request')[0] as (req: IncomingMessage, res: ServerResponse) => void;
  await sample.close();
  const connections = new Map<string, number>();
  let requests = 0;
  const server = createServer(
    {
      cert: readFileSync(certFile),
      key: readFileSync(process.env.BENCH_BACKEND_TLS_KEY_FILE ?? ''),
      ca: readFileSync(process.env.BENCH_BACKEND_TLS_CA_FILE ?? ''),
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
    },
    (req, res) => {
      if (req.url === '/bench-stats') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ requests, connections: Object.fromEntries(connections) }));
        return;
      }
      requests++;
      handler(req, res);
    },
  );
  server.on('secureConnection', (socket) => {
    const name = `${socket.getProtocol()} ${socket.getCipher().name}`;
    connections.set(name, (connections.get(name) ?? 0) + 1);
  });
  server.keepAliveTimeout = 65_000;
  server.listen(port, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0, tls: true })}\n`);
  });
}
