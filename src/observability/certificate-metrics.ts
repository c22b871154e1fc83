// When each certificate the gateway holds or meets expires: one gauge, a series per role, for the alert 14 days ahead.
import { Gauge, type Registry } from 'prom-client';

/** Whose certificate: the listeners', the gateway's client certificate to the backends, the backends' own. */
export const CERTIFICATE_ROLES = ['listener', 'admin', 'upstream_client', 'upstream_server'] as const;
export type CertificateRole = (typeof CERTIFICATE_ROLES)[number];

export interface CertificateMetrics {
  /** The certificate `role` holds now expires at `notAfter`; undefined: the role holds none (its series goes). */
  held(role: Exclude<CertificateRole, 'upstream_server'>, notAfter: Date | undefined): void;
  /** A backend at `origin` presented a certificate expiring at `notAfter` on a new connection. */
  upstreamSeen(origin: string, notAfter: Date): void;
}

export function createCertificateMetrics(options: { registers: Registry[]; environment: string; name: (suffix: string) => string }): CertificateMetrics {
  const { environment } = options;
  const expiry = new Gauge({
    name: options.name('tls_certificate_expiry_timestamp_seconds'),
    help: "When each certificate the gateway holds expires (notAfter, Unix seconds), by role: listener, admin, upstream_client (the client certificate of mutual TLS), upstream_server (the backend's, as last seen on a new connection; the soonest of several backends). No series for a role without a certificate.",
    labelNames: ['role', 'environment'] as const,
    registers: options.registers,
  });
  // One entry per backend origin (the configured upstreams): the series reports the one that expires first.
  const seenByOrigin = new Map<string, number>();
  return {
    held(role, notAfter) {
      if (notAfter === undefined) expiry.remove({ role, environment });
      else expiry.set({ role, environment }, notAfter.getTime() / 1000);
    },
    upstreamSeen(origin, notAfter) {
      const seconds = notAfter.getTime() / 1000;
      // The same certificate on every connection: nothing to update.
      if (seenByOrigin.get(origin) === seconds) return;
      seenByOrigin.set(origin, seconds);
      expiry.set({ role: 'upstream_server', environment }, Math.min(...seenByOrigin.values()));
    },
  };
}
