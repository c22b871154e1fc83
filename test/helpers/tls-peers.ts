// Real TLS peers for the TLS tests: an HTTPS backend (mutual TLS when asked), handshakes, and the certificate a listener serves.
import { X509Certificate } from 'node:crypto';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { connect, type ConnectionOptions, type SecureContextOptions, type SecureVersion, type TLSSocket } from 'node:tls';
import { scaled } from '../../support/time-scale.ts';
import type { IssuedCertificate, TestAuthority, TestPki } from './test-certificates.ts';

export interface TlsUpstreamOptions {
  cert: string;
  key: string;
  /** The authorities whose client certificates are accepted; with `requestCert`, a client without one is refused. */
  ca?: string | string[];
  requestCert?: boolean;
  minVersion?: SecureVersion;
  maxVersion?: SecureVersion;
  /** Every request's answer; 200 `[]` at once when absent. */
  handler?: (req: IncomingMessage, res: ServerResponse) => void;
}

/** What the backend saw of one request: the connection it came on, and the client certificate and SNI name of that connection. */
export interface SeenRequest {
  url: string;
  /** The client port of the connection: two requests on one connection share it. */
  remotePort: number;
  clientCertificate?: string;
  servername?: string;
}

export interface TlsUpstream {
  /** https://localhost:<port>/v1 */
  baseUrl: string;
  port: number;
  /** TCP connections accepted, handshake failed or not. */
  readonly connections: number;
  /** Every request that reached the HTTP layer, in order. */
  readonly seen: readonly SeenRequest[];
  /** The client ports of the connections that have closed. */
  readonly closedPorts: ReadonlySet<number>;
  /** Serves and trusts new material for new connections (as a backend renewing its certificate does). */
  setSecureContext(options: SecureContextOptions): void;
  /** Closes the idle keep-alive connections, so the gateway's next request opens a new one. */
  closeIdleConnections(): void;
  close(): Promise<void>;
}

const answerEmptyList = (_req: IncomingMessage, res: ServerResponse) =>
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('[]');

/** An HTTPS backend on 127.0.0.1 (localhost) that records, per request, the client certificate and SNI name it was reached with. */
export async function startTlsUpstream(options: TlsUpstreamOptions): Promise<TlsUpstream> {
  const state = { connections: 0, seen: [] as SeenRequest[], closedPorts: new Set<number>() };
  const handler = options.handler ?? answerEmptyList;
  const server: Server = createServer(
    {
      cert: options.cert,
      key: options.key,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
      requestCert: options.requestCert ?? false,
      rejectUnauthorized: options.requestCert ?? false,
      ...(options.minVersion ? { minVersion: options.minVersion } : {}),
      ...(options.maxVersion ? { maxVersion: options.maxVersion } : {}),
    },
    (req, res) => {
      const socket = req.socket as TLSSocket;
      const peer = socket.getPeerCertificate();
      const servername = (socket as TLSSocket & { servername?: string | false }).servername;
      state.seen.push({
        url: req.url ?? '',
        remotePort: socket.remotePort ?? 0,
        ...(peer.raw ? { clientCertificate: new X509Certificate(peer.raw).fingerprint256 } : {}),
        ...(typeof servername === 'string' ? { servername } : {}),
      });
      handler(req, res);
    },
  );
  server.on('connection', (socket: Socket) => {
    state.connections++;
    const port = socket.remotePort;
    socket.once('close', () => port !== undefined && state.closedPorts.add(port));
  });
  // A refused handshake is the test's subject, not an error of the server.
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `https://localhost:${port}/v1`,
    port,
    get connections() {
      return state.connections;
    },
    get seen() {
      return state.seen;
    },
    get closedPorts() {
      return state.closedPorts;
    },
    setSecureContext: (context) => server.setSecureContext(context),
    closeIdleConnections: () => server.closeIdleConnections(),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface OpensslServer {
  /** https://localhost:<port>/v1 */
  baseUrl: string;
  port: number;
  close(): Promise<void>;
}

/**
 * `openssl s_server` requiring a client certificate from `caFile`: a peer that verifies it in OpenSSL and says why it
 * refuses with an alert (unknown_ca, certificate_required), as Envoy or Go do. A Node server verifies a client certificate
 * in JavaScript and only drops the connection, which tells the client nothing.
 */
export async function startOpensslServer(options: {
  certFile: string;
  keyFile: string;
  caFile: string;
  version: 'TLSv1.2' | 'TLSv1.3';
  /** Default 0: the port the system gives, read from s_server's ACCEPT line. */
  port?: number;
}): Promise<OpensslServer> {
  const args = ['s_server', '-accept', `127.0.0.1:${options.port ?? 0}`, '-cert', options.certFile, '-key', options.keyFile];
  args.push('-CAfile', options.caFile, '-Verify', '1', '-verify_return_error', '-www', options.version === 'TLSv1.2' ? '-tls1_2' : '-tls1_3');
  const child = spawn('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let output = '';
    const read = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const accepting = /ACCEPT \S+:(\d+)/.exec(output);
      if (accepting) resolve(Number(accepting[1]));
    };
    child.stdout.on('data', read);
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('exit', (code) => reject(new Error(`openssl s_server exited (${code}): ${output}`)));
  });
  return {
    baseUrl: `https://localhost:${port}/v1`,
    port,
    close: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill();
      }),
  };
}

/**
 * A certificate valid only from a year ahead: `openssl x509 -req` cannot set a start date, `openssl ca` can. Issued by
 * `authority` for localhost and 127.0.0.1; the key and request are the helper's own, re-signed with the later dates.
 */
export function issueNotYetValid(pki: TestPki, authority: TestAuthority, name: string): IssuedCertificate {
  const issued = authority.issue({ name });
  const start = new Date(Date.now() + 365 * 86_400_000);
  const end = new Date(start.getTime() + 30 * 86_400_000);
  // openssl ca's dates: YYYYMMDDHHMMSSZ.
  const asOpensslDate = (date: Date) => `${date.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
  const database = pki.write(`${name}.index`, '');
  const config = pki.write(
    `${name}.cnf`,
    `[ca]\ndefault_ca=test\n[test]\ndatabase=${database}\nnew_certs_dir=${pki.dir}\nserial=${join(pki.dir, `${name}.serial`)}\nrand_serial=yes\ndefault_md=sha256\npolicy=anything\n[anything]\ncommonName=supplied\n`,
  );
  const args = ['ca', '-batch', '-config', config, '-cert', authority.certFile, '-keyfile', authority.keyFile, '-in', join(pki.dir, `${name}.csr`)];
  args.push('-out', issued.certFile, '-startdate', asOpensslDate(start), '-enddate', asOpensslDate(end), '-extfile', join(pki.dir, `${name}.ext`), '-notext');
  execFileSync('openssl', args, { cwd: pki.dir, stdio: ['ignore', 'ignore', 'pipe'] });
  return { ...issued, cert: readFileSync(issued.certFile, 'utf8') };
}

/** The certificate's SHA-256 fingerprint, as getPeerCertificate() reports it. */
export function fingerprintOf(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}

/** The certificate's notAfter in Unix seconds: what the expiry gauge must say. */
export function notAfterSeconds(pem: string): number {
  return Date.parse(new X509Certificate(pem).validTo) / 1000;
}

export type HandshakeOutcome = { ok: true; protocol: string; fingerprint: string; serialNumber: string } | { ok: false; code: string; message: string };

/** One new TLS connection to 127.0.0.1:port, named localhost: what was negotiated and served, or why it failed. */
export function handshake(port: number, options: ConnectionOptions = {}): Promise<HandshakeOutcome> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', ...options }, () => {
      const served = socket.getPeerCertificate();
      resolve({ ok: true, protocol: socket.getProtocol() ?? '', fingerprint: served.fingerprint256, serialNumber: served.serialNumber });
      socket.destroy();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve({ ok: false, code: error.code ?? '', message: error.message }));
  });
}

/** The fingerprint of the certificate a new connection to the listener is served; throws when the handshake fails. */
export async function servedFingerprint(port: number, ca: string): Promise<string> {
  const outcome = await handshake(port, { ca });
  if (!outcome.ok) throw new Error(`handshake with port ${port} failed: ${outcome.code} ${outcome.message}`);
  return outcome.fingerprint;
}

export interface CurlAnswer {
  status: number;
  contentType: string;
  body: string;
  /** The protocol curl says it negotiated (TLSv1.2, TLSv1.3). */
  protocol: string;
}

/** curl against https://localhost:port (pinned to 127.0.0.1) with the CA file: the client an operator would use. */
export function curl(port: number, path: string, options: { caFile: string; apiKey?: string; args?: readonly string[] }): Promise<CurlAnswer> {
  const args = [
    '--silent',
    '--show-error',
    '--verbose',
    '--cacert',
    options.caFile,
    '--resolve',
    `localhost:${port}:127.0.0.1`,
    ...(options.apiKey ? ['--header', `Authorization: Bearer ${options.apiKey}`] : []),
    ...(options.args ?? []),
    '--write-out',
    '\n%{http_code} %{content_type}',
    `https://localhost:${port}${path}`,
  ];
  return new Promise((resolve, reject) => {
    execFile('curl', args, { timeout: scaled(10_000) }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`curl failed: ${stderr}`, { cause: error }));
      const separator = stdout.lastIndexOf('\n');
      const trailer = stdout.slice(separator + 1);
      const space = trailer.indexOf(' ');
      const [status, contentType] = space === -1 ? [trailer, ''] : [trailer.slice(0, space), trailer.slice(space + 1)];
      const protocol = /SSL connection using (TLSv[\d.]+)/.exec(stderr)?.[1] ?? '';
      resolve({ status: Number(status), contentType, body: stdout.slice(0, separator), protocol });
    });
  });
}
