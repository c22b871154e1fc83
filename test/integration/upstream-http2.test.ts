// HTTP/2 to a TLS backend (upstream.http2): each answer on a stream of its own, so a backend that tries to answer twice reaches no other caller.
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { createTestPki, type IssuedCertificate, type TestAuthority, type TestPki } from '../helpers/test-certificates.ts';

let pki: TestPki;
let backendCa: TestAuthority;
let backend: IssuedCertificate;
beforeAll(() => {
  pki = createTestPki();
  backendCa = pki.authority('backend-ca');
  backend = backendCa.issue({ name: 'backend', days: 25 });
});
afterAll(() => pki.remove());

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function petList(madeFor: string): string {
  return JSON.stringify([{ id: 1, name: madeFor, categoryId: 1 }]);
}

/**
 * An h2-only TLS backend that answers each request with a Pet list naming the request's X-Request-Id, then, 15 ms later, tries
 * to write a second complete answer (naming "stray"): on its own stream, already ended, that has no way to reach another request.
 */
async function startH2Backend() {
  const record = { protocols: new Set<string>(), answers: 0, strays: { tried: 0, refused: 0 } };
  const server: Http2SecureServer = createSecureServer({ cert: backend.cert, key: backend.key, allowHTTP1: false }, (req, res) => {
    record.protocols.add(req.httpVersion);
    const id = String(req.headers['x-request-id']);
    const body = petList(id);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length, 'x-request-id': id });
    res.end(body);
    record.answers++;
    setTimeout(() => {
      record.strays.tried++;
      try {
        const stray = petList('stray');
        res.stream.respond({ ':status': 200, 'content-type': 'application/json', 'content-length': stray.length });
        res.stream.end(stray);
      } catch {
        record.strays.refused++;
      }
    }, 15);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Sessions still open are ended with the server.
        for (const session of sessions) session.destroy();
      }),
  );
  const sessions = new Set<import('node:http2').ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  return { baseUrl: `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, record };
}

describe('upstream.http2 with an h2 TLS backend', () => {
  it('speaks h2; a backend writing a stray answer after each one hands no caller another request’s answer (three keys, 0-8 ms apart)', async () => {
    const { baseUrl, record } = await startH2Backend();
    const gateway: TestGateway = buildTestGateway({
      upstreamUrl: baseUrl,
      env: { PORT: '0', ADMIN_PORT: '0' },
      overrides: { upstream: { http2: true }, upstreamTls: { production: { caFile: backendCa.certFile } } },
    });
    const running = await gateway.listen();
    closers.push(async () => {
      await running.shutdown('test over');
      gateway.close();
    });
    const keys = [gateway.apiKey, gateway.addKey(), gateway.addKey()];
    const calls: Array<Promise<{ id: string; status: number; body: string }>> = [];
    for (let call = 0; call < 60; call++) {
      const id = `h2-key${call % 3}-${String(call).padStart(4, '0')}`;
      calls.push(
        fetch(`http://127.0.0.1:${running.port}/v1/pets`, { headers: { authorization: `Bearer ${keys[call % 3]}`, 'x-request-id': id } }).then(
          async (answer) => ({ id, status: answer.status, body: await answer.text() }),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, (call * 7) % 9));
    }
    const got = await Promise.all(calls);
    await new Promise((resolve) => setTimeout(resolve, 40));
    const summary = `backend spoke ${[...record.protocols].join(', ')}, wrote ${record.answers} answers, tried ${record.strays.tried} strays (${record.strays.refused} refused by its own stream)`;
    expect([...record.protocols], summary).toEqual(['2.0']);
    expect(
      got.map((answer) => ({ status: answer.status, body: answer.body })),
      summary,
    ).toEqual(got.map((answer) => ({ status: 200, body: petList(answer.id) })));
    expect(record.strays.tried, summary).toBe(60);
  });

  it('without upstream.http2 the gateway does not offer h2: an h2-only backend refuses the connection', async () => {
    const { baseUrl, record } = await startH2Backend();
    const gateway = buildTestGateway({ upstreamUrl: baseUrl, overrides: { upstreamTls: { production: { caFile: backendCa.certFile } } } });
    closers.push(async () => gateway.close());
    const running = await gateway.listen();
    closers.push(() => running.shutdown('test over'));
    const answer = await fetch(`http://127.0.0.1:${running.port}/v1/pets`, { headers: { authorization: `Bearer ${gateway.apiKey}` } });
    expect(answer.status).toBe(502);
    expect(record.answers).toBe(0);
  });
});
