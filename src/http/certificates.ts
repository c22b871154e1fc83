// Certificates and private keys read from PEM files and checked, every fault naming the setting that names the file.
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** A certificate file or key file that cannot serve: the message names the setting and the file, never the key's bytes. */
export class CertificateFileError extends Error {
  override name = 'CertificateFileError';
}

/** A certificate (its chain after it) and the private key that matches it, as read. */
export interface CertificatePair {
  cert: Buffer;
  key: Buffer;
  /** The leaf certificate's notAfter. */
  notAfter: Date;
  /** The leaf certificate's SHA-256 fingerprint, for a log line saying which certificate is in force. */
  fingerprint: string;
}

/** The two files of a pair, and the words an operator knows each by (`TLS_CERT_FILE (listen.tls.certFile)`). */
export interface PairFiles {
  certFile: string;
  keyFile: string;
  certSetting: string;
  keySetting: string;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

function readPem(file: string, setting: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new CertificateFileError(`${setting}: ${file} cannot be read (${code})`, { cause: error });
  }
}

/** Every certificate of a PEM bundle, in order; a file with none, or with one that does not parse, is refused. */
function certificatesIn(pem: Buffer, file: string, setting: string): X509Certificate[] {
  const blocks = pem.toString('latin1').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new CertificateFileError(`${setting}: ${file} holds no PEM certificate`);
  return blocks.map((block, index) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new CertificateFileError(`${setting}: certificate ${index + 1} of ${file} does not parse`, { cause: error });
    }
  });
}

/** Reads a bundle of trusted authorities (PEM); returns each certificate's PEM, as tls.connect's `ca` takes them. */
export function readCertificateBundle(file: string, setting: string): string[] {
  return certificatesIn(readPem(file, setting), file, setting).map((certificate) => certificate.toString());
}

/** Reads a certificate and its key; refused when either does not parse or the key is not the certificate's. */
export function readCertificatePair(files: PairFiles): CertificatePair {
  const cert = readPem(files.certFile, files.certSetting);
  const [leaf] = certificatesIn(cert, files.certFile, files.certSetting) as [X509Certificate, ...X509Certificate[]];
  const key = readPem(files.keyFile, files.keySetting);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (error) {
    // OpenSSL's words only: they never quote the key.
    const why = error instanceof Error ? error.message : String(error);
    throw new CertificateFileError(`${files.keySetting}: ${files.keyFile} holds no private key that parses (an unencrypted PEM key): ${why}`, {
      cause: error,
    });
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new CertificateFileError(`${files.keySetting}: the key in ${files.keyFile} is not the key of the certificate in ${files.certFile}`);
  }
  return { cert, key, notAfter: new Date(leaf.validTo), fingerprint: leaf.fingerprint256 };
}
