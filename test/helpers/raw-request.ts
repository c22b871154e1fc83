// Sends a request exactly as written, path untouched: URL-based clients normalise the tricks under test.
import { createServer, request, type IncomingHttpHeaders, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export async function listen(handler: RequestListener): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function rawRequest(
  port: number,
  /** `localAddress`: the loopback address the request comes from (127.0.0.2...), where a limit is per address. */
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer; localAddress?: string },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    // Content-Length is always set for a body: Node would send a GET body unframed, which is a different test.
    const headers = options.body === undefined ? options.headers : { ...options.headers, 'Content-Length': String(Buffer.byteLength(options.body)) };
    const target = { host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers, agent: false };
    const req = request(options.localAddress === undefined ? target : { ...target, localAddress: options.localAddress }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}
