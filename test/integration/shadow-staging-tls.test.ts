// Shadow requests to an https:// staging that pins a private CA and asks for a client certificate: they connect with
// upstreamTls.staging (its authorities, client certificate), and without staging's CA they fail as staging_error, production
// untouched; a bad staging file refuses the configuration, and a renewed one is taken up by the certificate watch.
import { X509Certificate } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../support/start-gateway-process.ts';
import { scaled } from '../../support/time-scale.ts';
import { buildTestGateway } from '../helpers/build-test-app.ts';
import { createSecretVolume } from '../helpers/secret-volume.ts';
import { sendRaw, startRecordingUpstream, type RecordedRequest, type RecordingUpstream } from '../helpers/raw-socket.ts';
import { startEdge, type Edge } from '../helpers/start-edge.ts';
import { createTestPki, type IssuedCertificate, type TestAuthority, type TestPki } from '../helpers/test-certificates.ts';
import { fingerprintOf, startTlsUpstream, type TlsUpstream } from '../helpers/tls-peers.ts';

const PET = JSON.stringify({ id: 1, name: 'pet 1', categoryId: 2, status: 'available' });

/** Pet 1, the same bytes from both backends: a shadow that reaches staging compares as a match. */
function answerPet(_req: IncomingMessage | RecordedRequest, res: ServerResponse): void {
  // A fixed Date: the backend's own would make two runs' bytes differ by the second they were answered in.
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(PET)), Date: 'Sat, 21 Nov 2026 12:00:00 GMT' });
  res.end(PET);
}

let pki: TestPki;
/** Signs staging's server certificate: a private CA, in no default store. */
let stagingCa: TestAuthority;
/** Signs the gateway's client certificate; staging accepts only its certificates. */
let clientCa: TestAuthority;
let gatewayClient: IssuedCertificate;
let production: RecordingUpstream;
let staging: TlsUpstream;
/** The X-Gateway-Shadow header of each request staging answered. */
const shadowMarks: Array<string | undefined> = [];
let edge: Edge | undefined;

beforeAll(async () => {
  pki = createTestPki();
  stagingCa = pki.authority('staging-ca');
  clientCa = pki.authority('client-ca');
  const stagingServer = stagingCa.issue({ name: 'staging' });
  gatewayClient = clientCa.issue({ name: 'gateway-client' });
  production = await startRecordingUpstream(answerPet);
  staging = await startTlsUpstream({
    cert: stagingServer.cert,
    key: stagingServer.key,
    ca: clientCa.cert,
    requestCert: true,
    handler: (req, res) => {
      const mark = req.headers['x-gateway-shadow'];
      shadowMarks.push(Array.isArray(mark) ? mark.join(',') : mark);
      answerPet(req, res);
    },
  });
});

afterEach(async () => {
  await edge?.close();
  edge = undefined;
});

afterAll(async () => {
  await staging.close();
  await production.close();
  pki.remove();
});

/** A production gateway shadowing every GET to staging, with `stagingTls` as upstreamTls.staging. */
async function productionGateway(shadow: boolean, stagingTls: Record<string, unknown>): Promise<Edge> {
  edge = await startEdge(production.baseUrl, {
    upstreamTls: { staging: stagingTls },
    shadow: shadow ? { sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 0 } : {},
  });
  return edge;
}

const reloads = (target: Edge) =>
  target.gateway
    .scrape()
    .then((text) => Number(/^petstore_gateway_config_reloads_total\{result="success",environment="production"\} (\d+)$/m.exec(text)?.[1] ?? 0));

async function getPet(target: Edge, id: string): Promise<string> {
  const answer = await sendRaw(
    target.running.port,
    `GET /v1/pets/1 HTTP/1.1\r\nHost: gateway.test\r\nX-Request-Id: ${id}\r\nAuthorization: Bearer ${target.gateway.apiKey}\r\nConnection: close\r\n\r\n`,
    { responses: 1 },
  );
  // The Date field tells the time, the rate limit's `t=` the seconds left: the rest is the same byte for byte.
  return answer.text.replace(/^Date: .*\r\n/m, '').replace(/^(RateLimit: .*; t=)\d+/m, '$1<seconds>');
}

const comparisons = (target: Edge, result: string) =>
  target.gateway
    .scrape()
    .then((text) =>
      Number(
        new RegExp(`^petstore_gateway_shadow_comparisons_total\\{operation="getPet",result="${result}",environment="production"\\} (\\d+)$`, 'm').exec(
          text,
        )?.[1] ?? 0,
      ),
    );

/** The upstream_client expiry series of `environment`'s certificate, in Unix seconds; undefined: none. */
const clientExpiry = (text: string, environment: string): number | undefined => {
  const found = new RegExp(
    `^petstore_gateway_tls_certificate_expiry_timestamp_seconds\\{role="upstream_client",environment="${environment}"\\} (\\d+)$`,
    'm',
  ).exec(text);
  return found === null ? undefined : Number(found[1]);
};
const notAfterOf = (certificate: IssuedCertificate) => new X509Certificate(certificate.cert).validToDate.getTime() / 1000;

describe('shadow requests to an https staging with its own CA and client certificate', () => {
  it("reach staging with upstreamTls.staging's CA and client certificate, and compare as a match", async () => {
    const on = await productionGateway(true, { caFile: stagingCa.certFile, certFile: gatewayClient.certFile, keyFile: gatewayClient.keyFile });
    const seenBefore = staging.seen.length;
    const answer = await getPet(on, 'staging-tls-1');
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    await waitFor(async () => (await comparisons(on, 'match')) === 1, scaled(10_000));
    expect(await comparisons(on, 'staging_error')).toBe(0);
    const reached = staging.seen.slice(seenBefore);
    expect(reached.map(({ url }) => url)).toEqual(['/v1/pets/1']);
    expect(reached[0]?.clientCertificate).toBe(fingerprintOf(gatewayClient.cert));
    expect(shadowMarks.at(-1)).toBe('1');
    // The certificate the copies offered has its expiry exported as staging's; production offers none.
    const metrics = await on.gateway.scrape();
    expect(clientExpiry(metrics, 'staging')).toBe(notAfterOf(gatewayClient));
    expect(clientExpiry(metrics, 'production')).toBeUndefined();
  });

  it("exports staging's client certificate expiry only while shadowing is on, taken up and dropped by reloads", async () => {
    const stagingTls = { caFile: stagingCa.certFile, certFile: gatewayClient.certFile, keyFile: gatewayClient.keyFile };
    const shadowOn = { sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 0 };
    let shadow: Record<string, unknown> = {};
    const gateway = buildTestGateway({
      upstreamUrl: production.baseUrl,
      overrides: { upstreamTls: { staging: stagingTls } },
      reloadOverrides: () => ({ upstreamTls: { staging: stagingTls }, shadow }),
    });
    try {
      // Configured, but no shadow offers it: not a certificate the gateway uses.
      expect(clientExpiry(await gateway.scrape(), 'staging')).toBeUndefined();
      shadow = shadowOn;
      expect(await gateway.reload()).toMatchObject({ result: 'success' });
      expect(clientExpiry(await gateway.scrape(), 'staging')).toBe(notAfterOf(gatewayClient));
      shadow = {};
      expect(await gateway.reload()).toMatchObject({ result: 'success' });
      expect(clientExpiry(await gateway.scrape(), 'staging')).toBeUndefined();
    } finally {
      await gateway.close();
    }
  });

  it("is counted staging_error without staging's CA, and production's answer is the one given with shadowing off", async () => {
    const off = await productionGateway(false, {});
    const unshadowed = await getPet(off, 'staging-tls-2');
    await off.close();
    edge = undefined;

    // The client certificate is offered, but staging's server certificate chains to a CA the gateway does not trust.
    const on = await productionGateway(true, { certFile: gatewayClient.certFile, keyFile: gatewayClient.keyFile });
    const seenBefore = staging.seen.length;
    expect(await getPet(on, 'staging-tls-2')).toBe(unshadowed);
    await waitFor(async () => (await comparisons(on, 'staging_error')) === 1, scaled(10_000));
    expect(await comparisons(on, 'match')).toBe(0);
    expect(staging.seen.length).toBe(seenBefore);
  });

  it('refuses a staging TLS file that does not parse, at start and on a reload, naming the setting', async () => {
    const broken = pki.write('broken-staging-ca.pem', '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n');
    const shadow = { sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 0 };
    expect(() => buildTestGateway({ upstreamUrl: production.baseUrl, overrides: { shadow, upstreamTls: { staging: { caFile: broken } } } })).toThrow(
      /^upstreamTls\.staging\.caFile: /,
    );
    let stagingTls: Record<string, unknown> = { caFile: stagingCa.certFile, certFile: gatewayClient.certFile, keyFile: gatewayClient.keyFile };
    const gateway = buildTestGateway({
      upstreamUrl: production.baseUrl,
      overrides: { shadow },
      reloadOverrides: () => ({ shadow, upstreamTls: { staging: stagingTls } }),
    });
    try {
      stagingTls = { ...stagingTls, caFile: broken };
      const outcome = await gateway.reload();
      expect(outcome.result).toBe('failure');
      expect(outcome.result === 'failure' && outcome.reason).toMatch(/^upstreamTls\.staging\.caFile: /);
    } finally {
      await gateway.close();
    }
  });

  it('sends the staging client certificate renewed on disk with the next shadows, by the certificate watch', async () => {
    // Another lifetime than the first's: the expiry series shows which one is offered.
    const renewed = clientCa.issue({ name: 'gateway-client-renewed', days: 60 });
    const volume = createSecretVolume(join(pki.dir, 'staging-secret'), {
      'tls.crt': gatewayClient.cert,
      'tls.key': gatewayClient.key,
      'ca.crt': stagingCa.cert,
    });
    edge = await startEdge(production.baseUrl, {
      upstreamTls: { staging: { caFile: volume.path('ca.crt'), certFile: volume.path('tls.crt'), keyFile: volume.path('tls.key') } },
      shadow: { sample: { default: 1 }, upstreamUrl: staging.baseUrl, noiseSample: 0 },
      certificates: { watchIntervalMs: 200 },
    });
    const on = edge;
    await getPet(on, 'staging-renew-1');
    await waitFor(async () => (await comparisons(on, 'match')) === 1, scaled(10_000));
    expect(staging.seen.at(-1)?.clientCertificate).toBe(fingerprintOf(gatewayClient.cert));

    const reloadsBefore = await reloads(on);
    volume.update({ 'tls.crt': renewed.cert, 'tls.key': renewed.key, 'ca.crt': stagingCa.cert });
    await waitFor(async () => (await reloads(on)) === reloadsBefore + 1, scaled(10_000));
    await getPet(on, 'staging-renew-2');
    await waitFor(async () => (await comparisons(on, 'match')) === 2, scaled(10_000));
    expect(staging.seen.at(-1)?.url).toBe('/v1/pets/1');
    expect(staging.seen.at(-1)?.clientCertificate).toBe(fingerprintOf(renewed.cert));
    expect(clientExpiry(await on.gateway.scrape(), 'staging')).toBe(notAfterOf(renewed));
  });
});
