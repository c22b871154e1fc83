// A TLS 1.3 backend's refusal of the gateway's client certificate is named through src/forks/tls-alerts.ts in the running
// gateway (decision 0024): undici fails the request with its own "other side closed", and the fork finds the backend's
// alert behind it by the connection's local port. Should the production exchange stop watching its connections, the
// answer would say `bad_gateway` (a reset); should undici start reporting the alert itself, the fork would be dead
// code: this test fails in both cases. It runs the listener production runs (`listen()`), built by the production
// composition, in front of a real HTTPS backend.
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { TlsAlerts } from '../../src/forks/tls-alerts.ts';
import type { RunningGateway } from '../../src/server/server.ts';
import { buildTestGateway } from '../helpers/build-test-app.ts';
import { parseResponses, sendRaw } from '../helpers/raw-socket.ts';
import { createTestPki, type TestPki } from '../helpers/test-certificates.ts';
import { startTlsUpstream, type TlsUpstream } from '../helpers/tls-peers.ts';

let pki: TestPki;
beforeAll(() => {
  pki = createTestPki();
});
afterAll(() => pki.remove());

let upstream: TlsUpstream | undefined;
let running: RunningGateway | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await running?.shutdown('test over');
  await upstream?.close();
  running = undefined;
  upstream = undefined;
});

it("names a TLS 1.3 backend's certificate_required through the fork, behind undici's own SocketError (engaged)", async () => {
  const backendCa = pki.authority('backend-ca');
  const clientCa = pki.authority('client-ca');
  const backend = backendCa.issue({ name: 'backend' });
  upstream = await startTlsUpstream({ cert: backend.cert, key: backend.key, ca: clientCa.cert, requestCert: true, maxVersion: 'TLSv1.3' });
  // Every failure the exchange asks the fork about, and what the fork found behind it.
  const explained: Array<[string | undefined, string | undefined]> = [];
  const alertBehind = TlsAlerts.prototype.alertBehind;
  vi.spyOn(TlsAlerts.prototype, 'alertBehind').mockImplementation(function (this: TlsAlerts, error: Error) {
    const alert = alertBehind.call(this, error);
    explained.push([(error as { code?: string }).code, (alert as { code?: string } | undefined)?.code]);
    return alert;
  });
  // No client certificate offered: the backend refuses the connection after the gateway's side of the handshake.
  const gateway = buildTestGateway({
    upstreamUrl: upstream.baseUrl,
    env: { PORT: '0', ADMIN_PORT: '0' },
    overrides: { upstreamTls: { production: { caFile: backendCa.certFile } } },
  });
  running = await gateway.listen();

  const answer = await sendRaw(running.port, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${gateway.apiKey}\r\n\r\n`, { responses: 1 });

  const [response] = parseResponses(answer.text);
  expect(response?.status).toBe(502);
  expect(JSON.parse(response?.body ?? '')).toEqual({
    code: 'upstream_tls_failed',
    message: "The pet store backend refused the gateway's client certificate (TLS)",
    status: 502,
  });
  expect(explained).toEqual([['UND_ERR_SOCKET', 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED']]);
  expect(upstream.seen).toHaveLength(0);
});
