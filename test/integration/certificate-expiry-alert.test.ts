// The certificate expiry gauge and its two alerts' expressions, asked of a real Prometheus scraping a gateway with an HTTPS listener and mutual TLS to an HTTPS backend, before and after a renewal.
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config/load-config.ts';
import { PROJECT_ROOT, waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { startPrometheus, type PrivatePrometheus } from '../helpers/start-prometheus.ts';
import { startRedisGateway, type RedisGateway } from '../helpers/start-redis-gateway.ts';
import { createTestPki, type IssuedCertificate, type TestAuthority, type TestPki } from '../helpers/test-certificates.ts';

const PEPPER = 'certificate-expiry-alert-pepper-01';
const METRIC = 'petstore_gateway_tls_certificate_expiry_timestamp_seconds';

/** An alert's expression as deploy/prometheus/alerts.yaml has it: what Prometheus evaluates, not a copy. */
const exprOf = (alert: string): string =>
  (
    parseYaml(readFileSync(join(PROJECT_ROOT, 'deploy/prometheus/alerts.yaml'), 'utf8')) as {
      groups: Array<{ rules: Array<{ alert?: string; expr: string }> }>;
    }
  ).groups
    .flatMap((group) => group.rules)
    .find((rule) => rule.alert === alert)!.expr;
const EXPIRES_SOON = exprOf('PetstoreGatewayCertificateExpiresSoon');
const ABOUT_TO_EXPIRE = exprOf('PetstoreGatewayCertificateAboutToExpire');

let pki: TestPki;
let ca: TestAuthority;
/** The listener's pair, 10 days: inside the 14-day ticket, outside the 2-day page. */
let listener: IssuedCertificate;
/** The gateway's client pair for the backend, 40 days: no alert. */
let client: IssuedCertificate;
/** The backend's own certificate, 1 day: both alerts. */
let backendCertificate: IssuedCertificate;
let backend: Server;
let redis: PrivateRedis;
let gateway: RedisGateway;
let prometheus: PrivatePrometheus;

const notAfterOf = (certificate: IssuedCertificate) => new X509Certificate(certificate.cert).validToDate.getTime() / 1000;

beforeAll(async () => {
  pki = createTestPki();
  ca = pki.authority('expiry-ca', 400);
  listener = ca.issue({ name: 'listener', days: 10 });
  client = ca.issue({ name: 'gateway-client', days: 40 });
  backendCertificate = ca.issue({ name: 'backend', days: 1 });
  // A backend that admits only clients with a certificate from the CA, answering every call with an empty pet list.
  backend = createServer(
    { cert: backendCertificate.cert, key: backendCertificate.key, ca: ca.cert, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('[]');
    },
  );
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  redis = await startRedis();
  const env = {
    PORT: '0',
    ADMIN_PORT: '0',
    REDIS_URL: redis.url,
    GATEWAY_ENVIRONMENT: 'production',
    UPSTREAM_URL: `https://127.0.0.1:${(backend.address() as AddressInfo).port}/v1`,
    TLS_CERT_FILE: listener.certFile,
    TLS_KEY_FILE: listener.keyFile,
    UPSTREAM_TLS_CA_FILE: ca.certFile,
    UPSTREAM_TLS_CERT_FILE: client.certFile,
    UPSTREAM_TLS_KEY_FILE: client.keyFile,
    // Renewed files taken up within a Prometheus scrape or two.
    CERTIFICATE_WATCH_MS: '200',
  };
  gateway = await startRedisGateway(loadConfig(env, { shutdown: { drainDelayMs: 0, gracePeriodMs: 1000 } }), { pepper: PEPPER });
  prometheus = await startPrometheus([`127.0.0.1:${gateway.adminPort}`], 'certificate-expiry');
}, 60_000);

afterAll(async () => {
  await prometheus?.stop();
  await gateway?.close();
  await redis?.stop();
  await new Promise((resolve) => (backend ? backend.close(resolve) : resolve(undefined)));
  pki?.remove();
});

/** GET on the HTTPS listener, trusting the test CA; resolves with the status. */
function getOverTls(path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: gateway.port, path, headers, ca: ca.cert, servername: 'localhost' }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode!));
    });
    req.once('error', reject).end();
  });
}

/** The gauge's series as Prometheus scraped them, by role: seconds of notAfter. */
async function expiryByRole(): Promise<Record<string, number>> {
  return Object.fromEntries((await prometheus.query(METRIC)).map((sample) => [sample.metric.role!, Number(sample.value[1])]));
}
const labelsOf = async (expr: string) => (await prometheus.query(expr)).map((sample) => `${sample.metric.environment} ${sample.metric.role}`).sort();

it('has a series per certificate the gateway holds or has seen, and none for the plain admin listener', async () => {
  const { key } = await gateway.admin.create({ consumer: 'acme', environments: ['production'] });
  // A call through the HTTPS listener, over mutual TLS to the backend: the gateway meets the backend's certificate.
  expect(await getOverTls('/v1/pets', { Authorization: `Bearer ${key}` })).toBe(200);
  await waitFor(async () => Object.keys(await expiryByRole()).length === 3, 20_000, 250);
  const scraped = await prometheus.query(METRIC);
  expect(scraped.map((sample) => sample.metric.environment)).toEqual(['production', 'production', 'production']);
  expect(await expiryByRole()).toEqual({
    listener: notAfterOf(listener),
    upstream_client: notAfterOf(client),
    upstream_server: notAfterOf(backendCertificate),
  });
}, 40_000);

it('tickets for the 10-day listener and the 1-day backend certificate, and pages for the backend one only', async () => {
  expect(await labelsOf(EXPIRES_SOON)).toEqual(['production listener', 'production upstream_server']);
  expect(await labelsOf(ABOUT_TO_EXPIRE)).toEqual(['production upstream_server']);
});

it('stops ticketing for the listener once its renewed pair is written over the files, with no restart', async () => {
  const renewed = ca.issue({ name: 'listener-renewed', days: 90 });
  // As the kubelet or an operator replaces them: each file whole, renamed into place.
  for (const [from, to] of [
    [renewed.keyFile, listener.keyFile],
    [renewed.certFile, listener.certFile],
  ] as const) {
    writeFileSync(`${to}.new`, readFileSync(from));
    renameSync(`${to}.new`, to);
  }
  await waitFor(async () => (await expiryByRole()).listener === notAfterOf(renewed), 20_000, 250);
  expect(await labelsOf(EXPIRES_SOON)).toEqual(['production upstream_server']);
  // The listener serves the renewed certificate to a new connection.
  const socket = connect({ host: '127.0.0.1', port: gateway.port, ca: ca.cert, servername: 'localhost' });
  await once(socket, 'secureConnect');
  const served = socket.getPeerX509Certificate()!;
  socket.destroy();
  expect(served.validToDate.getTime() / 1000).toBe(notAfterOf(renewed));
}, 40_000);
