// node:http's and node:https's values, taken from their CommonJS module objects rather than an ESM import.
//
// An ESM import builds a namespace from every export, reading the lazy WebSocket getters Node 22.5+ puts on the
// module, which loads Node's bundled undici; the module object leaves them unread.
// Types still come from `import type ... from 'node:http'`.
import type { Server, ServerOptions } from 'node:http';
import type { Server as TlsServer, TlsOptions } from 'node:tls';

const http = process.getBuiltinModule('node:http');

export const createServer = http.createServer;
export const STATUS_CODES = http.STATUS_CODES;

/** An HTTP/1.1 server, over TLS when given `tls`: the same options, events and timeouts either way. */
export function createListenerServer(options: ServerOptions, tls: TlsOptions | undefined): Server {
  if (tls === undefined) return http.createServer(options);
  // node:https's Server is node:http's over a TLS server (it runs http.Server's own connection handling and
  // timeouts), but its type descends from tls.Server: it is used as what it behaves as.
  return process.getBuiltinModule('node:https').createServer({ ...options, ...tls }) as unknown as Server;
}

/** A server createListenerServer made over TLS, as one whose certificate can be replaced; undefined for a plain one. */
export function secureContextOf(server: Server): Pick<TlsServer, 'setSecureContext'> | undefined {
  return 'setSecureContext' in server ? (server as unknown as TlsServer) : undefined;
}
