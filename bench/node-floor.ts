// The Node floor: what Node itself costs to proxy a request. node:http in front, undici's Pool.stream behind
// (the gateway's own client, the same pool size), no framework and no features: no authentication, no
// validation, no limits, no logs, no metrics. Hop-by-hop headers are dropped both ways, as any proxy must.
//   node bench/node-floor.ts <upstream origin> <port>
// Behind the same TLS as the gateway, read from the gateway's own settings: TLS_CERT_FILE and TLS_KEY_FILE make the
// listener node:https with the gateway's listener policy; UPSTREAM_TLS_CA_FILE (the only authority trusted),
// UPSTREAM_TLS_CERT_FILE and UPSTREAM_TLS_KEY_FILE (the client certificate) go to the Pool's connector.
import { constants } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Writable } from 'node:stream';
import { Pool } from 'undici';

const [target = '', port = '0'] = process.argv.slice(2);
const file = (name: string) => (process.env[name] ? readFileSync(process.env[name]) : undefined);
const upstreamCa = file('UPSTREAM_TLS_CA_FILE');
const pool = new Pool(target, {
  connections: 256,
  ...(upstreamCa === undefined
    ? {}
    : // The gateway's upstream options for these settings (src/proxy/upstream-tls.ts): the CA alone, the pair, TLS 1.2 at least.
      { connect: { ca: upstreamCa, cert: file('UPSTREAM_TLS_CERT_FILE'), key: file('UPSTREAM_TLS_KEY_FILE'), minVersion: 'TLSv1.2' as const } }),
});
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host']);

function endToEnd(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): OutgoingHttpHeaders {
  const kept: OutgoingHttpHeaders = {};
  for (const name in headers) if (!HOP_BY_HOP.has(name)) kept[name] = headers[name];
  return kept;
}

function proxy(req: IncomingMessage, res: ServerResponse): void {
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
}
/**
 * The gateway's listener policy (src/server/listener-tls.ts), copied rather than imported: the floor loads no gateway
 * code. TLS 1.2 and 1.3, Mozilla's intermediate suites, the client's order, no renegotiation, ALPN http/1.1.
 */
const LISTENER_POLICY = {
  minVersion: 'TLSv1.2',
  maxVersion: 'TLSv1.3',
  ciphers: [
    'TLS_AES_128_GCM_SHA256',
    'TLS_AES_256_GCM_SHA384',
    'TLS_CHACHA20_POLY1305_SHA256',
    'ECDHE-ECDSA-AES128-GCM-SHA256',
    'ECDHE-RSA-AES128-GCM-SHA256',
    'ECDHE-ECDSA-AES256-GCM-SHA384',
    'ECDHE-RSA-AES256-GCM-SHA384',
    'ECDHE-ECDSA-CHACHA20-POLY1305',
    'ECDHE-RSA-CHACHA20-POLY1305',
  ].join(':'),
  honorCipherOrder: false,
  secureOptions: constants.SSL_OP_NO_RENEGOTIATION,
  ALPNProtocols: ['http/1.1'],
} as const;
const listenerCert = file('TLS_CERT_FILE');
const server =
  listenerCert === undefined ? createHttpServer(proxy) : createHttpsServer({ ...LISTENER_POLICY, cert: listenerCert, key: file('TLS_KEY_FILE') }, proxy);
server.keepAliveTimeout = 65_000;
server.listen(Number(port), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
// An orderly exit on a signal, so that --cpu-prof writes its profile.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));
