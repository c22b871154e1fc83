// Creates a signing key file for caller identity: the operator command and the demo both use it.
import { generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { signingKeyFromPem, type SigningKey } from './signing-key.ts';

export const KEY_ALGORITHMS = ['ed25519', 'es256'] as const;
export type KeyAlgorithm = (typeof KEY_ALGORITHMS)[number];

/** A new private key as PKCS#8 PEM: Ed25519 (signs EdDSA) or P-256 (signs ES256). */
export function generateSigningKeyPem(algorithm: KeyAlgorithm): string {
  const { privateKey } = algorithm === 'ed25519' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
}

/** Writes a new key to `file` (0600) and returns it as loaded; never overwrites a key that may be signing (EEXIST). */
export async function writeSigningKeyFile(file: string, algorithm: KeyAlgorithm): Promise<SigningKey> {
  const pem = generateSigningKeyPem(algorithm);
  await writeFile(file, pem, { mode: 0o600, flag: 'wx' });
  return signingKeyFromPem(pem, file);
}
