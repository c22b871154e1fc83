// HTTPS on the listeners: the TLS policy, the certificate pairs read from their files, and a pair taken up without a restart.
import { constants } from 'node:crypto';
import { createSecureContext, type Server as TlsServer, type TlsOptions } from 'node:tls';
import { CertificateFileError, type CertificatePair, readCertificatePair } from '../http/certificates.ts';
import type { CertificatePairFiles, GatewayConfig } from '../config/schema.ts';
import type { HandshakeFailureReason } from '../observability/tls-metrics.ts';

/** The listeners that can speak TLS, as the expiry metric's `role` names them. */
export type ListenerRole = 'listener' | 'admin';

/**
 * Mozilla's "intermediate" configuration (v5.7): TLS 1.2 with forward-secret AEAD suites only, and TLS 1.3's three.
 * The DHE suites of that list are left out: without a `dhparam` Node never offers them.
 */
const LISTENER_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** The policy of every TLS listener; `setSecureContext` resets what it is not given, so each context is made from all of it. */
const LISTENER_POLICY = {
  minVersion: 'TLSv1.2',
  maxVersion: 'TLSv1.3',
  ciphers: LISTENER_CIPHERS,
  // Every suite is strong: the client's order is kept (its hardware may make ChaCha20 the faster one).
  honorCipherOrder: false,
  // A client-initiated renegotiation makes the server do a handshake's work on demand, once per request if it likes.
  secureOptions: constants.SSL_OP_NO_RENEGOTIATION,
  ALPNProtocols: ['http/1.1'],
} as const satisfies TlsOptions;

/** What a TLS listener's secure context is made of: the policy and one pair. */
export function listenerTlsOptions(pair: CertificatePair): TlsOptions {
  return { ...LISTENER_POLICY, cert: pair.cert, key: pair.key };
}

/** The pair of each listener that speaks TLS (none for a plain one). */
export type ListenerPairs = Partial<Record<ListenerRole, CertificatePair>>;

const SETTINGS: Record<ListenerRole, { files: (listen: GatewayConfig['listen']) => CertificatePairFiles; cert: string; key: string }> = {
  listener: { files: (listen) => listen.tls, cert: 'TLS_CERT_FILE (listen.tls.certFile)', key: 'TLS_KEY_FILE (listen.tls.keyFile)' },
  admin: {
    files: (listen) => listen.adminTls,
    cert: 'ADMIN_TLS_CERT_FILE (listen.adminTls.certFile)',
    key: 'ADMIN_TLS_KEY_FILE (listen.adminTls.keyFile)',
  },
};

/** Reads each configured listener pair; a file that does not parse, or a key that is not the certificate's, throws naming the setting. */
export function readListenerPairs(listen: GatewayConfig['listen']): ListenerPairs {
  const pairs: ListenerPairs = {};
  for (const role of ['listener', 'admin'] as const) {
    const { certFile, keyFile } = SETTINGS[role].files(listen);
    if (certFile === null || keyFile === null) continue;
    const pair = readCertificatePair({ certFile, keyFile, certSetting: SETTINGS[role].cert, keySetting: SETTINGS[role].key });
    // The context the listener will make, made here: what OpenSSL refuses (a key too small for its security level...)
    // refuses the reload before anything is swapped, not halfway through taking it up.
    try {
      createSecureContext(listenerTlsOptions(pair));
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new CertificateFileError(`${SETTINGS[role].cert}: ${certFile} cannot serve TLS: ${why}`, { cause: error });
    }
    pairs[role] = pair;
  }
  return pairs;
}

/** A TLS listener, as far as taking up a new pair goes. */
export type SecureContextHolder = Pick<TlsServer, 'setSecureContext'>;

/** The pairs in force, and the TLS listeners serving them. */
export interface ListenerCertificates {
  readonly pairs: ListenerPairs;
  /** New connections to each TLS listener get `pairs` from now on; open connections keep the pair they were made with. */
  takeUp(pairs: ListenerPairs): void;
  /** A listener made with `pairs[role]`, kept up to date by `takeUp`. */
  attach(role: ListenerRole, server: SecureContextHolder): void;
}

/** `onPairs` is told the pairs at once and after each take-up (the expiry metric). */
export function createListenerCertificates(first: ListenerPairs, onPairs: (pairs: ListenerPairs) => void): ListenerCertificates {
  let pairs = first;
  const servers = new Map<ListenerRole, SecureContextHolder>();
  onPairs(pairs);
  return {
    get pairs() {
      return pairs;
    },
    takeUp(next) {
      pairs = next;
      for (const [role, server] of servers) {
        const pair = next[role];
        // The listeners were made TLS or not at start (`listen` is a restart setting): a pair never goes missing here.
        if (pair !== undefined) server.setSecureContext(listenerTlsOptions(pair));
      }
      onPairs(pairs);
    },
    attach(role, server) {
      servers.set(role, server);
    },
  };
}

/** Why a client's handshake failed, from Node's and OpenSSL's error codes (a closed set: a metric label). */
export function handshakeFailureReason(error: unknown): HandshakeFailureReason {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return 'other';
  if (code === 'ERR_SSL_HTTP_REQUEST') return 'plain_http';
  if (code === 'ERR_TLS_HANDSHAKE_TIMEOUT') return 'timeout';
  if (code === 'ECONNRESET') return 'reset';
  if (code === 'ERR_SSL_NO_SHARED_CIPHER') return 'no_shared_cipher';
  if (/VERSION|UNSUPPORTED_PROTOCOL|NO_PROTOCOLS_AVAILABLE/.test(code)) return 'protocol_version';
  // The client's alert about the gateway's certificate: it does not trust it, it expired, or it is for another name.
  if (/_ALERT_(UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|CERTIFICATE_EXPIRED|UNSUPPORTED_CERTIFICATE)$/.test(code)) return 'certificate_refused';
  return 'other';
}
