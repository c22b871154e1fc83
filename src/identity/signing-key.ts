// Loads the private key that signs caller identity tokens: Ed25519 (EdDSA) or P-256 (ES256), refused otherwise.
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { calculateJwkThumbprint, exportJWK, importPKCS8, type CryptoKey, type JWK } from 'jose';

export type SigningAlgorithm = 'EdDSA' | 'ES256';

/** How the settings that name key files are shown in refusals: the environment variable and the config key. */
export const KEY_FILE_SETTING = 'UPSTREAM_IDENTITY_KEY_FILE (upstreamIdentity.keyFile)';
export const PREVIOUS_KEY_FILE_SETTING = 'UPSTREAM_IDENTITY_PREVIOUS_KEY_FILE (upstreamIdentity.previousKeyFile)';

/** A private key ready to sign, with the public half as it is published in the JWKS. */
export interface SigningKey {
  readonly algorithm: SigningAlgorithm;
  /** RFC 7638 JWK thumbprint (SHA-256, base64url) of the public key: the tokens' `kid`. */
  readonly kid: string;
  /** Not extractable: nothing can read the private key back out of the process through it. */
  readonly privateKey: CryptoKey;
  /** The public key as a JWK with `kid`, `alg` and `use: "sig"`; never a private member. */
  readonly publicJwk: Readonly<JWK>;
}

export type SigningKeyErrorCode = 'unreadable' | 'public_key' | 'encrypted' | 'not_a_private_key' | 'unsupported_key_type' | 'same_as_current';

/** A key file the gateway refuses; the message names the setting, `code` says why. */
export class SigningKeyError extends Error {
  override name = 'SigningKeyError';
  readonly code: SigningKeyErrorCode;

  constructor(code: SigningKeyErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** Reads a PEM private key file for signing; `setting` (KEY_FILE_SETTING...) starts every refusal's message. */
export async function loadSigningKey(file: string, setting: string = KEY_FILE_SETTING): Promise<SigningKey> {
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (cause) {
    throw new SigningKeyError('unreadable', `${setting}: ${file} could not be read: ${(cause as Error).message}`, { cause });
  }
  return signingKeyFromPem(pem, `${setting}: ${file}`);
}

/** As loadSigningKey, from the PEM text; `source` starts every refusal's message. */
export async function signingKeyFromPem(pem: string, source: string): Promise<SigningKey> {
  const keyObject = parsePrivateKey(pem, source);
  const algorithm = algorithmOf(keyObject, source);
  // Normalised to PKCS#8, so a P-256 key written by `openssl ecparam` (SEC1) is read as well.
  const pkcs8 = keyObject.export({ type: 'pkcs8', format: 'pem' }) as string;
  const privateKey = await importPKCS8(pkcs8, algorithm, { extractable: false });
  const { kty, crv, x, y } = await exportJWK(createPublicKey(keyObject));
  // An EdDSA or ES256 key always has these three (and ES256 a y): the thumbprint is over exactly them.
  if (kty === undefined || crv === undefined || x === undefined) throw new Error(`${source}: the public key has no kty, crv or x`);
  const publicMembers: JWK = y === undefined ? { kty, crv, x } : { kty, crv, x, y };
  const kid = await calculateJwkThumbprint(publicMembers, 'sha256');
  return Object.freeze({
    algorithm,
    kid,
    privateKey,
    publicJwk: Object.freeze({ ...publicMembers, kid, alg: algorithm, use: 'sig' }),
  });
}

function parsePrivateKey(pem: string, source: string): KeyObject {
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(pem)) {
    throw new SigningKeyError(
      'encrypted',
      `${source} is an encrypted private key; the gateway reads unencrypted PKCS#8 PEM (mount it as a secret file with mode 0600)`,
    );
  }
  try {
    return createPrivateKey(pem);
  } catch (cause) {
    // Node cannot tell "public key" from "garbage" in its error; asking for the public key can.
    if (isPublicKey(pem)) {
      throw new SigningKeyError(
        'public_key',
        `${source} holds a public key or certificate; the gateway needs the private key (PKCS#8 PEM, "BEGIN PRIVATE KEY")`,
        { cause },
      );
    }
    throw new SigningKeyError('not_a_private_key', `${source} is not a PEM private key (expected PKCS#8, "BEGIN PRIVATE KEY")`, { cause });
  }
}

function isPublicKey(pem: string): boolean {
  try {
    createPublicKey(pem);
    return true;
  } catch {
    return false;
  }
}

function algorithmOf(key: KeyObject, source: string): SigningAlgorithm {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  const found = key.asymmetricKeyType === 'ec' ? `an EC key on curve ${key.asymmetricKeyDetails?.namedCurve}` : `a key of type ${key.asymmetricKeyType}`;
  throw new SigningKeyError('unsupported_key_type', `${source} is ${found}; use an Ed25519 or P-256 key (npm run identity-key -- generate)`);
}
