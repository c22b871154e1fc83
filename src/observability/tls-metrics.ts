// TLS seen from the outside: when each certificate the gateway holds or meets expires, and the handshakes its listeners refused.
import { Counter, Gauge, type Registry } from 'prom-client';

/** Whose certificate: the listeners', the gateway's client certificate to the backends, the backends' own. */
export const CERTIFICATE_ROLES = ['listener', 'admin', 'upstream_client', 'upstream_server'] as const;
export type CertificateRole = (typeof CERTIFICATE_ROLES)[number];

/** Why a client's handshake with a listener failed (src/server/listener-tls.ts, handshakeFailureReason). */
export const HANDSHAKE_FAILURE_REASONS = ['plain_http', 'timeout', 'protocol_version', 'no_shared_cipher', 'certificate_refused', 'reset', 'other'] as const;
export type HandshakeFailureReason = (typeof HANDSHAKE_FAILURE_REASONS)[number];

export interface TlsMetrics {
  /**
   * The certificate `role` holds now expires at `notAfter`; undefined: the role holds none (its series goes). `of`: the
   * environment whose certificate it is, in the `environment` label: the gateway's own, unless said (staging's client
   * certificate, offered by shadow requests from a production gateway).
   */
  held(role: Exclude<CertificateRole, 'upstream_server'>, notAfter: Date | undefined, of?: string): void;
  /** A backend at `origin` presented a certificate expiring at `notAfter` on a new connection. */
  upstreamSeen(origin: string, notAfter: Date): void;
  /** A client's handshake with a TLS listener failed. */
  handshakeFailed(listener: 'listener' | 'admin', reason: HandshakeFailureReason): void;
}

export interface TlsMetricsOptions {
  registers: Registry[];
  environment: string;
  name: (suffix: string) => string;
  /** The listeners that speak TLS: their handshake failure series start at 0. */
  tlsListeners: ReadonlyArray<'listener' | 'admin'>;
}

export function createTlsMetrics(options: TlsMetricsOptions): TlsMetrics {
  const { environment } = options;
  const expiry = new Gauge({
    name: options.name('tls_certificate_expiry_timestamp_seconds'),
    help: "When each certificate the gateway holds expires (notAfter, Unix seconds), by role: listener, admin, upstream_client (the client certificate of mutual TLS; and staging's, labelled environment staging, while shadow requests offer it), upstream_server (the backend's, as last seen on a new connection; the soonest of several backends). No series for a role without a certificate.",
    labelNames: ['role', 'environment'] as const,
    registers: options.registers,
  });
  const handshakeFailures = new Counter({
    name: options.name('tls_handshake_failures_total'),
    help: `Client handshakes a TLS listener did not complete, by listener and reason (${HANDSHAKE_FAILURE_REASONS.join(', ')}). certificate_refused: the client refused the gateway's certificate.`,
    labelNames: ['listener', 'reason', 'environment'] as const,
    registers: options.registers,
  });
  for (const listener of options.tlsListeners) for (const reason of HANDSHAKE_FAILURE_REASONS) handshakeFailures.inc({ listener, reason, environment }, 0);
  // One entry per backend origin (the configured upstreams): the series reports the one that expires first.
  const seenByOrigin = new Map<string, number>();
  return {
    held(role, notAfter, of = environment) {
      if (notAfter === undefined) expiry.remove({ role, environment: of });
      else expiry.set({ role, environment: of }, notAfter.getTime() / 1000);
    },
    upstreamSeen(origin, notAfter) {
      const seconds = notAfter.getTime() / 1000;
      // The same certificate on every connection: nothing to update.
      if (seenByOrigin.get(origin) === seconds) return;
      seenByOrigin.set(origin, seconds);
      expiry.set({ role: 'upstream_server', environment }, Math.min(...seenByOrigin.values()));
    },
    handshakeFailed(listener, reason) {
      handshakeFailures.inc({ listener, reason, environment });
    },
  };
}
