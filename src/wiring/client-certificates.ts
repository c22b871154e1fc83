// When the client certificates the gateway offers its backends expire: the running environment's, and staging's for shadows.
import type { Environment } from '../config/schema.ts';
import type { TlsMetrics } from '../observability/tls-metrics.ts';
import type { BackendTls } from '../proxy/upstream-tls.ts';

/**
 * Sets the upstream_client expiry series from what a pipeline generation connects with, at start and after each reload. On a
 * gateway outside staging, staging's certificate (upstreamTls.staging, offered by shadow requests) is the series with
 * environment="staging", there only while shadowing is on: a reload that turns shadowing off, or drops the certificate, removes
 * it. On a staging gateway that series is its own certificate's, set once.
 */
export function reportClientCertificates(tls: TlsMetrics, environment: Environment, backendTls: BackendTls): void {
  tls.held('upstream_client', backendTls.clientNotAfter);
  if (environment !== 'staging') tls.held('upstream_client', backendTls.shadowClientNotAfter, 'staging');
}
