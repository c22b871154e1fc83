// Requests Node's HTTP parser rejects still get an Error body, on the real listener, plain and HTTPS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleBackend } from '../../src/demo/sample-backend.ts';
import type { RunningGateway } from '../../src/server/server.ts';
import { buildTestGateway, type TestGateway } from '../helpers/build-test-app.ts';
import { edgeTransports } from '../helpers/edge-transport.ts';
import { startPetStore } from '../../support/start-upstream.ts';

const transports = edgeTransports();
afterAll(() => transports.remove());

describe.each(transports.all)('over $name', (transport) => {
  let backend: SampleBackend;
  let gateway: TestGateway;
  let running: RunningGateway;

  beforeAll(async () => {
    backend = await startPetStore();
    gateway = buildTestGateway({ upstreamUrl: backend.baseUrl, env: { PORT: '0', ADMIN_PORT: '0', ...transport.env() } });
    running = await gateway.listen();
  });
  afterAll(async () => {
    await running.shutdown('test over');
    gateway.close();
    await backend.close();
  });

  function sendRaw(bytes: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = transport.connect(running.port, () => socket.write(bytes));
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
      socket.on('end', () => resolve(answer));
      // A TLS session cut without close_notify may end with the close alone.
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  function bodyOf(answer: string): unknown {
    return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
  }

  describe('malformed HTTP', () => {
    it('answers garbage with a 400 Error body and closes the connection', async () => {
      const answer = await sendRaw('NOT HTTP AT ALL\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('Content-Type: application/json; charset=utf-8');
      expect(answer).toContain('Connection: close');
      expect(bodyOf(answer)).toEqual({ code: 'invalid_request', message: 'The request is not valid HTTP/1.1', status: 400 });
    });

    it('answers both Content-Length and Transfer-Encoding (smuggling) with a 400 Error body', async () => {
      const answer = await sendRaw('POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(bodyOf(answer)).toMatchObject({ code: 'invalid_request', status: 400 });
    });

    it('answers oversized headers with 431 and an Error body', async () => {
      const answer = await sendRaw(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 431 /);
      expect(bodyOf(answer)).toEqual({ code: 'header_fields_too_large', message: 'Request headers are larger than the gateway accepts', status: 431 });
    });
  });
});
