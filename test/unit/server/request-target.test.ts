// The request line and the headers that frame it: toOriginForm's rewrite and targetRefusal's table.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { targetRefusal, toOriginForm } from '../../../src/server/request-target.ts';

/** The fields of a parsed request the two functions read. */
function request(url: string, headers: Record<string, string> = { host: 'gw.example' }, httpVersion = '1.1'): IncomingMessage & { url: string } {
  const rawHeaders = Object.entries(headers).flat();
  return { url, headers: { ...headers }, rawHeaders, httpVersion } as unknown as IncomingMessage & { url: string };
}

describe('toOriginForm', () => {
  it.each([
    ['http://other.example/v1/pets?limit=1', '/v1/pets?limit=1', 'other.example'],
    ['HTTPS://other.example:8443', '/', 'other.example:8443'],
    ['http://other.example#top', '#top', 'other.example'],
    ['http:///v1/pets', '/v1/pets', ''],
  ])('rewrites %s to the path %s with the authority %j as Host', (target, path, host) => {
    const req = request(target);
    toOriginForm(req);
    expect(req.url).toBe(path);
    expect(req.headers.host).toBe(host);
  });

  it('leaves an origin-form target and its Host alone', () => {
    const req = request('/v1/pets');
    toOriginForm(req);
    expect(req.url).toBe('/v1/pets');
    expect(req.headers.host).toBe('gw.example');
  });
});

describe('targetRefusal', () => {
  it.each([
    ['*', { host: 'gw.example' }, 'invalid_request', 'The request target must be a path'],
    ['/v1/pets#top', { host: 'gw.example' }, 'invalid_request', 'The request target must not carry a fragment (#)'],
    ['/v1/pets?q=1#', { host: 'gw.example' }, 'invalid_request', 'The request target must not carry a fragment (#)'],
    ['/v1/pets', { host: '' }, 'invalid_request', 'An HTTP/1.1 request must carry a Host header naming a host and optional port'],
    ['/v1/pets', { host: 'user@other.example' }, 'invalid_request', 'An HTTP/1.1 request must carry a Host header naming a host and optional port'],
    ['/v1/pets', { host: 'gw.example', expect: 'teapot' }, 'expectation_failed', "The expectation 'teapot' cannot be met; only 100-continue is supported"],
  ])('refuses %s with %j', (url, headers, code, message) => {
    expect(targetRefusal(request(url, headers))?.toBody()).toEqual({ code, message, status: code === 'expectation_failed' ? 417 : 400 });
  });

  it('passes a path with a well-formed Host', () => {
    expect(targetRefusal(request('/v1/pets?limit=1', { host: 'gw.example:8080', expect: '100-continue' }))).toBeUndefined();
  });
});
