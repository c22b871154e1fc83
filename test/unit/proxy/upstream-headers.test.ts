// The headers the upstream receives, row by row: the client's the policy allows, then the ones the gateway states itself.
import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { upstreamHeaders, type ForwardingFacts } from '../../../src/proxy/upstream-headers.ts';

const FORWARDED = new Set(['accept', 'content-type', 'if-none-match', 'x-trace']);
const FACTS: ForwardingFacts = {
  requestId: 'req-1',
  peer: '192.0.2.7',
  proto: 'http',
  upstreamHost: 'backend:8080',
  bodyLength: undefined,
  methodTakesBody: false,
  traceState: undefined,
};

/** The gateway's own headers for a client that sent only `Host: gw.example`. */
const STATED = {
  host: 'backend:8080',
  'x-request-id': 'req-1',
  'x-forwarded-for': '192.0.2.7',
  'x-forwarded-proto': 'http',
  'x-forwarded-host': 'gw.example',
  forwarded: 'for=192.0.2.7;proto=http;host="gw.example"',
  'x-real-ip': '192.0.2.7',
};

describe('upstreamHeaders', () => {
  it.each<[string, IncomingHttpHeaders, Partial<ForwardingFacts>, Record<string, string | undefined>]>([
    ['states its own headers', {}, {}, {}],
    ['forwards what the policy allows, and nothing else', { accept: 'application/json', cookie: 'a=1', 'x-other': '1' }, {}, { accept: 'application/json' }],
    ["removes what the client's Connection lists", { connection: 'close, X-Trace', 'x-trace': 't', accept: '*/*' }, {}, { accept: '*/*' }],
    [
      'keeps Content-Type even when Connection lists it',
      { connection: 'content-type', 'content-type': 'application/json' },
      {},
      { 'content-type': 'application/json' },
    ],
    ['declares the body it sends', { 'content-length': '99' }, { bodyLength: 12 }, { 'content-length': '12' }],
    ['declares an empty body of a POST as 0', {}, { methodTakesBody: true }, { 'content-length': '0' }],
    ['states X-Request-Id and X-Real-IP itself, whatever the client sent', { 'x-request-id': 'forged', 'x-real-ip': '10.0.0.1' }, {}, {}],
    ['appends to X-Forwarded-For', { 'x-forwarded-for': '198.51.100.1' }, {}, { 'x-forwarded-for': '198.51.100.1, 192.0.2.7' }],
    [
      'appends to a Forwarded chain that parses',
      { forwarded: 'for=198.51.100.1' },
      {},
      { forwarded: 'for=198.51.100.1, for=192.0.2.7;proto=http;host="gw.example"' },
    ],
    ['drops a Forwarded chain that does not parse', { forwarded: 'for="198.51.100.1' }, {}, {}],
    [
      'quotes and brackets an IPv6 peer',
      {},
      { peer: '2001:db8::1', proto: 'https' },
      {
        'x-forwarded-for': '2001:db8::1',
        'x-forwarded-proto': 'https',
        forwarded: 'for="[2001:db8::1]";proto=https;host="gw.example"',
        'x-real-ip': '2001:db8::1',
      },
    ],
  ])('%s', (_case, client, facts, expected) => {
    const headers = upstreamHeaders({ host: 'gw.example', ...client }, FORWARDED, { ...FACTS, ...facts });
    expect(headers).toEqual({ ...STATED, ...expected });
  });

  it('states no X-Forwarded-Host, nor a host in Forwarded, for a client without Host', () => {
    const headers = upstreamHeaders({}, FORWARDED, FACTS);
    expect(headers['x-forwarded-host']).toBeUndefined();
    expect(headers.forwarded).toBe('for=192.0.2.7;proto=http');
  });

  it("removes what each request's own Connection lists, one request after another", () => {
    const client = { host: 'gw.example', 'x-trace': 't', accept: '*/*', 'if-none-match': '"1"' };
    const forwardedFor = (connection: string) => Object.keys(upstreamHeaders({ ...client, connection }, FORWARDED, FACTS)).filter((name) => !(name in STATED));
    expect([forwardedFor('x-trace'), forwardedFor('accept'), forwardedFor('x-trace'), forwardedFor('If-None-Match, Accept')]).toEqual([
      ['accept', 'if-none-match'],
      ['x-trace', 'if-none-match'],
      ['accept', 'if-none-match'],
      ['x-trace'],
    ]);
  });

  it('strips quotes from the host it puts in Forwarded', () => {
    expect(upstreamHeaders({ host: 'gw".example' }, FORWARDED, FACTS).forwarded).toBe('for=192.0.2.7;proto=http;host="gw.example"');
  });
});
