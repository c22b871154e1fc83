// The certificate expiry gauge: a series per role held, gone when the role holds none; the backends' soonest.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createTlsMetrics } from '../../../src/observability/tls-metrics.ts';

type Json = Array<{ name: string; values: Array<{ labels: Record<string, string>; value: number }> }>;

async function series(registry: Registry): Promise<Record<string, number>> {
  const metric = ((await registry.getMetricsAsJSON()) as Json).find(({ name }) => name === 'petstore_gateway_tls_certificate_expiry_timestamp_seconds');
  return Object.fromEntries((metric?.values ?? []).map(({ labels, value }) => [labels.role, value]));
}

async function failures(registry: Registry): Promise<Record<string, number>> {
  const metric = ((await registry.getMetricsAsJSON()) as Json).find(({ name }) => name === 'petstore_gateway_tls_handshake_failures_total');
  return Object.fromEntries((metric?.values ?? []).map(({ labels, value }) => [`${labels.listener}:${labels.reason}`, value]));
}

function metrics() {
  const registry = new Registry();
  const certificates = createTlsMetrics({
    registers: [registry],
    environment: 'staging',
    name: (suffix) => `petstore_gateway_${suffix}`,
    tlsListeners: ['listener'],
  });
  return { registry, certificates };
}

describe('TLS metrics', () => {
  it("sets a held certificate's notAfter in seconds, and removes the series when the role holds none", async () => {
    const { registry, certificates } = metrics();
    certificates.held('listener', new Date('2027-01-01T00:00:00Z'));
    certificates.held('upstream_client', new Date('2027-02-01T00:00:00Z'));
    expect(await series(registry)).toEqual({ listener: 1798761600, upstream_client: 1801440000 });
    certificates.held('upstream_client', undefined);
    expect(await series(registry)).toEqual({ listener: 1798761600 });
  });

  it("labels a certificate of another environment's with that environment: staging's client certificate on a gateway shadowing to it", async () => {
    const { registry, certificates } = metrics();
    certificates.held('upstream_client', new Date('2027-02-01T00:00:00Z'), 'production');
    const text = await registry.metrics();
    expect(text).toContain('petstore_gateway_tls_certificate_expiry_timestamp_seconds{role="upstream_client",environment="production"} 1801440000');
    expect(text).not.toContain('environment="staging"} 1801440000');
    certificates.held('upstream_client', undefined, 'production');
    expect(await registry.metrics()).not.toContain('role="upstream_client"');
  });

  it("reports the backend certificate that expires first, each backend's as last seen", async () => {
    const { registry, certificates } = metrics();
    certificates.upstreamSeen('https://a:443', new Date('2027-03-01T00:00:00Z'));
    certificates.upstreamSeen('https://b:443', new Date('2027-02-01T00:00:00Z'));
    expect(await series(registry)).toEqual({ upstream_server: 1801440000 });
    // b renewed: a's is now the first to expire.
    certificates.upstreamSeen('https://b:443', new Date('2027-05-01T00:00:00Z'));
    expect(await series(registry)).toEqual({ upstream_server: 1803859200 });
  });

  it("counts a TLS listener's failed handshakes by reason, every reason from 0", async () => {
    const { registry, certificates } = metrics();
    certificates.handshakeFailed('listener', 'plain_http');
    expect(await failures(registry)).toEqual({
      'listener:plain_http': 1,
      'listener:timeout': 0,
      'listener:protocol_version': 0,
      'listener:no_shared_cipher': 0,
      'listener:certificate_refused': 0,
      'listener:reset': 0,
      'listener:other': 0,
    });
  });
});
