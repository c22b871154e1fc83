// CONNECT, fragments and absolute-form targets on the public listener, byte for byte, over TCP and TLS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeTransports } from '../helpers/edge-transport.ts';
import { parseResponses, sendRaw as sendRawOver, startRecordingUpstream, type RawSendOptions, type RecordingUpstream } from '../helpers/raw-socket.ts';
import { startEdge, type Edge } from '../helpers/start-edge.ts';

const transports = edgeTransports();
afterAll(() => transports.remove());

describe.each(transports.all)('over $name', (transport) => {
  const sendRaw = (port: number, bytes: string, options: RawSendOptions = {}) => sendRawOver(port, bytes, { ...options, transport });

  let upstream: RecordingUpstream;
  let edge: Edge;
  let key: string;

  beforeAll(async () => {
    upstream = await startRecordingUpstream((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' });
      res.end('[]');
    });
    edge = await startEdge(upstream.baseUrl, {}, undefined, transport);
    key = edge.gateway.apiKey;
  });
  afterAll(async () => {
    await edge.close();
    await upstream.close();
  });

  const CONNECT_REFUSAL = { code: 'invalid_request', message: 'CONNECT is not served: the gateway is not a proxy', status: 400 };
  const FRAGMENT_REFUSAL = { code: 'invalid_request', message: 'The request target must not carry a fragment (#)', status: 400 };

  describe('CONNECT', () => {
    it.each([
      ['authority form', 'CONNECT upstream.example:443 HTTP/1.1\r\nHost: upstream.example:443\r\n\r\n'],
      ['origin form', 'CONNECT /v1/pets HTTP/1.1\r\nHost: gw.example\r\n\r\n'],
    ])('in the %s gets one 400 Error body, and the connection closes', async (_form, bytes) => {
      const before = upstream.requests.length;
      const answer = await sendRaw(edge.running.port, bytes);
      expect(answer.statuses).toEqual([400]);
      expect(answer.closed).toBe(true);
      const [response] = parseResponses(answer.text);
      expect(response!.headers).toEqual({ 'content-type': 'application/json; charset=utf-8', 'content-length': '101', connection: 'close' });
      expect(JSON.parse(response!.body)).toEqual(CONNECT_REFUSAL);
      expect(upstream.requests.length).toBe(before);
    });

    it('pipelined behind a GET, is refused after the GET is answered', async () => {
      const answer = await sendRaw(
        edge.running.port,
        `GET /v1/pets HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${key}\r\n\r\n` +
          'CONNECT upstream.example:443 HTTP/1.1\r\nHost: upstream.example:443\r\n\r\n',
      );
      expect(answer.statuses).toEqual([200, 400]);
      expect(answer.closed).toBe(true);
      expect(JSON.parse(parseResponses(answer.text)[1]!.body)).toEqual(CONNECT_REFUSAL);
    });
  });

  describe('a fragment in the request target', () => {
    it.each(['/v1/pets#top', '/v1/pets?limit=2#top', 'http://gw.example/v1/pets#top'])(
      '%s gets 400 invalid_request and never reaches the upstream',
      async (target) => {
        const before = upstream.requests.length;
        const answer = await sendRaw(edge.running.port, `GET ${target} HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${key}\r\n\r\n`, { responses: 1 });
        expect(answer.statuses).toEqual([400]);
        const [response] = parseResponses(answer.text);
        expect(response!.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
        expect(JSON.parse(response!.body)).toEqual(FRAGMENT_REFUSAL);
        expect(upstream.requests.length).toBe(before);
      },
    );
  });

  describe('an absolute-form target', () => {
    it("forwards the target's authority as the host, not Host's (RFC 9112 §3.2.2)", async () => {
      const before = upstream.requests.length;
      const answer = await sendRaw(
        edge.running.port,
        `GET http://other.example:8443/v1/pets?limit=1 HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${key}\r\n\r\n`,
        { responses: 1 },
      );
      expect(answer.statuses).toEqual([200]);
      expect(upstream.requests[before]!.url).toBe('/v1/pets?limit=1');
      // The upstream connection is pooled: the last request on it is this one.
      const connection = upstream.connections.at(-1)!;
      const sent = connection.slice(connection.lastIndexOf('GET /v1/pets?limit=1 '));
      expect(sent).toContain('\r\nx-forwarded-host: other.example:8443\r\n');
      expect(sent).toContain(`\r\nforwarded: for=127.0.0.1;proto=${transport.proto};host="other.example:8443"\r\n`);
      expect(sent).not.toContain('gw.example');
    });

    it.each([
      ['an empty authority', 'http:///v1/pets'],
      ['userinfo', 'http://user:secret@other.example/v1/pets'],
    ])('with %s gets 400 invalid_request', async (_what, target) => {
      const before = upstream.requests.length;
      const answer = await sendRaw(edge.running.port, `GET ${target} HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer ${key}\r\n\r\n`, { responses: 1 });
      expect(answer.statuses).toEqual([400]);
      expect(JSON.parse(parseResponses(answer.text)[0]!.body)).toEqual({
        code: 'invalid_request',
        message: 'An HTTP/1.1 request must carry a Host header naming a host and optional port',
        status: 400,
      });
      expect(upstream.requests.length).toBe(before);
    });
  });
});
