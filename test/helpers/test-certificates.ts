// Certificate authorities and certificates made with openssl for tests: real TLS peers, never a mocked handshake.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface IssuedCertificate {
  certFile: string;
  keyFile: string;
  /** PEM of the certificate, and of its private key. */
  cert: string;
  key: string;
}

export interface IssueOptions {
  /** File names in the directory: `<name>.pem`, `<name>.key`. */
  name: string;
  commonName?: string;
  /** subjectAltName entries; `localhost` and 127.0.0.1 by default. */
  dnsNames?: readonly string[];
  ipAddresses?: readonly string[];
  /** Days of validity from now; a negative number makes a certificate that has already expired. */
  days?: number;
}

export interface TestAuthority extends IssuedCertificate {
  /** A leaf (server and client use) signed by this authority. */
  issue(options: IssueOptions): IssuedCertificate;
}

export interface TestPki {
  dir: string;
  /** A self-signed certificate authority. */
  authority(name: string, days?: number): TestAuthority;
  /** Writes `text` into the directory and returns its path (a broken PEM, a bundle...). */
  write(name: string, text: string): string;
  remove(): void;
}

function openssl(args: readonly string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function newKey(dir: string, keyFile: string): void {
  // P-256: generated in milliseconds, where RSA takes a tenth of a second per key.
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile], dir);
}

function read(certFile: string, keyFile: string): IssuedCertificate {
  return { certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

/** A directory of certificates made for one test file; `remove` deletes it. */
export function createTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-pki-'));
  return {
    dir,
    authority(name, days = 30) {
      const keyFile = join(dir, `${name}.key`);
      const certFile = join(dir, `${name}.pem`);
      newKey(dir, keyFile);
      openssl(['req', '-x509', '-new', '-key', keyFile, '-out', certFile, '-days', String(days), '-subj', `/CN=${name}`], dir);
      const authority = read(certFile, keyFile);
      return {
        ...authority,
        issue(options) {
          const leafKey = join(dir, `${options.name}.key`);
          const leafCert = join(dir, `${options.name}.pem`);
          const csr = join(dir, `${options.name}.csr`);
          const extensions = join(dir, `${options.name}.ext`);
          newKey(dir, leafKey);
          openssl(['req', '-new', '-key', leafKey, '-out', csr, '-subj', `/CN=${options.commonName ?? options.name}`], dir);
          const names = [...(options.dnsNames ?? ['localhost']).map((dns) => `DNS:${dns}`), ...(options.ipAddresses ?? ['127.0.0.1']).map((ip) => `IP:${ip}`)];
          writeFileSync(extensions, `subjectAltName=${names.join(',')}\nextendedKeyUsage=serverAuth,clientAuth\n`);
          // -days -1 gives a notAfter before now: a certificate that has expired.
          const days = String(options.days ?? 20);
          openssl(
            ['x509', '-req', '-in', csr, '-CA', certFile, '-CAkey', keyFile, '-CAcreateserial', '-out', leafCert, '-days', days, '-extfile', extensions],
            dir,
          );
          return read(leafCert, leafKey);
        },
      };
    },
    write(name, text) {
      const file = join(dir, name);
      writeFileSync(file, text);
      return file;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
