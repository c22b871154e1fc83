// The TLS bench's certificates, made with openssl in a directory of the run: an authority, the servers' certificate
// (the gateway's and the floor's listeners, the mTLS backend) and the client certificate the proxies present upstream.
// The same approach as the tests' helper (test/helpers/test-certificates.ts), kept apart: the bench imports nothing from test/.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface BenchPki {
  /** The authority's certificate: every peer trusts it, and only it. */
  caFile: string;
  /** Served by every TLS listener of the bench (names localhost and 127.0.0.1). */
  serverCertFile: string;
  serverKeyFile: string;
  /** Presented by the gateway and the floor to the mTLS backend. */
  clientCertFile: string;
  clientKeyFile: string;
}

function openssl(args: readonly string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/**
 * P-256 keys (ECDHE-ECDSA), what a cert-manager Issuer hands out by default for ECDSA and what most
 * public sites now serve; RSA-2048 would make each new connection's handshake costlier, which keep-alive
 * amortises anyway (docs/performance.md#tls-on-both-legs).
 */
function newKey(dir: string, keyFile: string): void {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile], dir);
}

function issue(dir: string, name: string, usage: 'serverAuth' | 'clientAuth', caCert: string, caKey: string): { certFile: string; keyFile: string } {
  const keyFile = join(dir, `${name}.key`);
  const certFile = join(dir, `${name}.pem`);
  const csr = join(dir, `${name}.csr`);
  const extensions = join(dir, `${name}.ext`);
  newKey(dir, keyFile);
  openssl(['req', '-new', '-key', keyFile, '-out', csr, '-subj', `/CN=bench-${name}`], dir);
  writeFileSync(extensions, `subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=${usage}\n`);
  openssl(['x509', '-req', '-in', csr, '-CA', caCert, '-CAkey', caKey, '-CAcreateserial', '-out', certFile, '-days', '2', '-extfile', extensions], dir);
  return { certFile, keyFile };
}

/** Makes the authority and both certificates in `dir` (a directory of the run, removed with it). */
export function createBenchPki(dir: string): BenchPki {
  const caKey = join(dir, 'bench-ca.key');
  const caFile = join(dir, 'bench-ca.pem');
  newKey(dir, caKey);
  openssl(['req', '-x509', '-new', '-key', caKey, '-out', caFile, '-days', '2', '-subj', '/CN=bench-ca'], dir);
  const server = issue(dir, 'server', 'serverAuth', caFile, caKey);
  const client = issue(dir, 'client', 'clientAuth', caFile, caKey);
  return { caFile, serverCertFile: server.certFile, serverKeyFile: server.keyFile, clientCertFile: client.certFile, clientKeyFile: client.keyFile };
}
