// undici's order of a client's errors, which src/forks/tls-alerts.ts relies on, held against undici itself and a real TLS 1.3
// backend that requires a client certificate; and the alert found behind undici's own error by the connection's local port.
import type { TLSSocket } from 'node:tls';
import { buildConnector, Pool } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TlsAlerts } from '../../../src/forks/tls-alerts.ts';
import { createTestPki, type IssuedCertificate, type TestAuthority, type TestPki } from '../../helpers/test-certificates.ts';
import { startTlsUpstream, type TlsUpstream } from '../../helpers/tls-peers.ts';

const ALERT = 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED';

let pki: TestPki;
let backendCa: TestAuthority;
let clientCa: TestAuthority;
let backend: IssuedCertificate;
beforeAll(() => {
  pki = createTestPki();
  backendCa = pki.authority('backend-ca');
  clientCa = pki.authority('client-ca');
  backend = backendCa.issue({ name: 'backend' });
});
afterAll(() => pki.remove());

let upstream: TlsUpstream | undefined;
let pool: Pool | undefined;
afterEach(async () => {
  await pool?.destroy();
  await upstream?.close();
  pool = undefined;
  upstream = undefined;
});

/** What each connection's socket reported, in order, by its local port. */
interface Connection {
  localPort: number | undefined;
  errors: string[];
}

/**
 * A pool to a TLS 1.3 backend that requires a client certificate, offering none: undici's own connector, as the exchange
 * builds it, each new socket handed to `onSocket` before undici has it.
 */
async function refusingBackendPool(onSocket: (socket: TLSSocket) => void): Promise<Pool> {
  upstream = await startTlsUpstream({
    cert: backend.cert,
    key: backend.key,
    ca: clientCa.cert,
    requestCert: true,
    minVersion: 'TLSv1.3',
    maxVersion: 'TLSv1.3',
  });
  const connect = buildConnector({ ca: backendCa.cert, rejectUnauthorized: true });
  pool = new Pool(`https://localhost:${upstream.port}`, {
    connect: (options, callback) =>
      connect(options, (...result) => {
        if (result[0] === null) onSocket(result[1] as TLSSocket);
        callback(...result);
      }),
  });
  return pool;
}

/** The error undici rejects the request with. */
async function failureOf(target: Pool): Promise<Error & { code?: string; socket?: { localPort?: number } }> {
  const failure = await target.request({ method: 'GET', path: '/v1/pets' }).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failure).toBeInstanceOf(Error);
  return failure as Error & { code?: string; socket?: { localPort?: number } };
}

describe("undici's report of a backend's TLS 1.3 alert (what the fork relies on: the oracle)", () => {
  it("is its own SocketError, naming the connection's local port, which it destroys the socket with after the alert", async () => {
    const connections: Connection[] = [];
    const target = await refusingBackendPool((socket) => {
      const connection: Connection = { localPort: socket.localPort, errors: [] };
      connections.push(connection);
      socket.on('error', (error: Error & { code?: string }) => connection.errors.push(error.code ?? error.message));
    });

    const failure = await failureOf(target);

    // Should undici report the alert itself, the fork is no longer needed: it goes (decision 0024's revisit).
    expect(failure.code).toBe('UND_ERR_SOCKET');
    expect(failure.message).toBe('other side closed');
    // The socket's own order: the backend's alert first, then undici's SocketError, the one the request is failed with.
    expect(connections).toEqual([{ localPort: failure.socket?.localPort, errors: [ALERT, 'UND_ERR_SOCKET'] }]);
  });
});

describe('TlsAlerts', () => {
  it("explains undici's SocketError with the alert its connection reported", async () => {
    const alerts = new TlsAlerts();
    const target = await refusingBackendPool((socket) => alerts.watch(socket));

    const failure = await failureOf(target);

    expect((alerts.explain(failure) as Error & { code?: string }).code).toBe(ALERT);
  });

  it("forgets a connection's alert a turn after its close has been reported", async () => {
    const alerts = new TlsAlerts();
    const target = await refusingBackendPool((socket) => alerts.watch(socket));
    const failure = await failureOf(target);

    await new Promise((resolve) => setImmediate(resolve));

    expect(alerts.explain(failure)).toBe(failure);
  });

  it('leaves every other error as it is', () => {
    const alerts = new TlsAlerts();
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const otherConnection = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET', socket: { localPort: 1 } });
    const noSocket = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET', socket: null });

    expect([reset, otherConnection, noSocket].map((error) => alerts.explain(error))).toEqual([reset, otherConnection, noSocket]);
  });
});
