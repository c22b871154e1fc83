// The admin listener's refusals and failures: Error bodies byte for byte as the public listener renders them.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAdminApp, type AdminAppOptions } from '../../../src/admin/admin-app.ts';
import { listen } from '../../helpers/raw-request.ts';
import { sendRaw } from '../../helpers/raw-socket.ts';

let closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closing.map((close) => close()));
  closing = [];
});

/** The whole answer to one request, its Date line (the only varying bytes) written as <date>. */
async function answer(options: Partial<AdminAppOptions>, request: string): Promise<string> {
  const { onUnexpected = () => undefined, ...rest } = options;
  const server = await listen(createAdminApp({ isAcceptingTraffic: () => true, checks: [], onUnexpected, ...rest }));
  closing.push(server.close);
  const { text } = await sendRaw(server.port, `${request}\r\nHost: admin\r\nConnection: close\r\n\r\n`);
  return text.replace(/\r\nDate: [^\r]*\r\n/, '\r\nDate: <date>\r\n');
}

function errorAnswer(status: string, body: object, extraHeaders = ''): string {
  const json = JSON.stringify(body);
  return (
    `HTTP/1.1 ${status}\r\n${extraHeaders}Content-Type: application/json; charset=utf-8\r\nContent-Length: ${json.length}\r\n` +
    `Date: <date>\r\nConnection: close\r\n\r\n${json}`
  );
}

const NOT_FOUND = {
  code: 'not_found',
  message: 'Admin endpoints: /healthz, /readyz, /metrics, /deprecations, /.well-known/jwks.json (when signing), /admin/ (when ADMIN_API_TOKEN_FILE is set)',
  status: 404,
};

describe('the admin app', () => {
  it.each(['GET /nothing', 'POST /healthz', 'DELETE /metrics'])('answers %s with the not_found Error body', async (line) => {
    expect(await answer({}, `${line} HTTP/1.1`)).toBe(errorAnswer('404 Not Found', NOT_FOUND));
  });

  it('answers the JWKS path with not_found while nothing is signed', async () => {
    expect(await answer({ jwks: () => undefined }, 'GET /.well-known/jwks.json HTTP/1.1')).toBe(errorAnswer('404 Not Found', NOT_FOUND));
  });

  it('answers a HEAD with the Error head and no body', async () => {
    const text = await answer({}, 'HEAD /nothing HTTP/1.1');
    expect(text).toBe(errorAnswer('404 Not Found', NOT_FOUND).replace(/\{.*$/, ''));
  });

  it('answers /deprecations with service_unavailable, not cached, when the report cannot be read', async () => {
    const text = await answer({ deprecations: () => Promise.reject(new Error('redis down')) }, 'GET /deprecations HTTP/1.1');
    expect(text).toBe(
      errorAnswer(
        '503 Service Unavailable',
        { code: 'service_unavailable', message: 'The deprecation report cannot be read from Redis; retry shortly', status: 503 },
        'Cache-Control: no-store\r\n',
      ),
    );
  });

  it('answers a failing metrics exposition with internal_error, and reports the error', async () => {
    const failure = new Error('a collect callback threw');
    const onUnexpected = vi.fn();
    const metrics = { contentType: 'text/plain', render: () => Promise.reject(failure) };
    const text = await answer({ metrics, onUnexpected }, 'GET /metrics HTTP/1.1');
    expect(text).toBe(errorAnswer('500 Internal Server Error', { code: 'internal_error', message: 'The gateway failed to handle the request', status: 500 }));
    expect(onUnexpected).toHaveBeenCalledWith(failure);
  });
});
