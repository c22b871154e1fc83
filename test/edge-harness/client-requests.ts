// The requests a harness client can write, as exact bytes: every operation and method of the interface, framed several ways.
import fc from 'fast-check';
import { KEY_PLACEHOLDER } from './script.ts';

export const REQUEST_KINDS = [
  'list',
  'listHead',
  'listEmptyBody',
  'get',
  'getHead',
  'create',
  'createChunked',
  'createExpectWait',
  'createExpectNow',
  'badQuery',
  'badPath',
  'badBody',
  'preflight',
  'preflightOther',
  // A fragment in the target: 400, never forwarded.
  'fragment',
  // An absolute-form target whose authority differs from Host: served as its path.
  'absoluteOther',
  // A POST the client leaves before its body ended (the request never goes out whole): no 500, no unexpected error.
  'createExpectLeave',
  'createPartialLeave',
  'createChunkedCut',
] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];
/** The kinds whose client closes the connection before the request ended. */
export const LEAVING_KINDS: ReadonlySet<RequestKind> = new Set(['createExpectLeave', 'createPartialLeave', 'createChunkedCut']);

/**
 * Trace context a client may send, well-formed or hostile: what the gateway continues (`traceId`,
 * `sampled`), or undefined where the upstream must see a new trace.
 */
export const TRACE_CONTEXTS: ReadonlyArray<{ lines: string; traceId?: string; sampled?: boolean }> = [
  { lines: '' },
  {
    lines: 'traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\ntracestate: vendor=abc,other=1\r\n',
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    sampled: true,
  },
  {
    lines: 'traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00\r\nbaggage: user=1,tenant=a\r\n',
    traceId: '0af7651916cd43dd8448eb211c80319c',
    sampled: false,
  },
  { lines: 'traceparent: 00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01\r\ntracestate: vendor=abc\r\n' },
  { lines: 'traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01\r\n' },
  { lines: 'traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n' },
  { lines: 'traceparent: ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n' },
  {
    lines: `traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\ntracestate: ${'k=v,'.repeat(40)}bad key=x\r\nbaggage: ${'m=1,'.repeat(2100)}end=1\r\n`,
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    sampled: true,
  },
];

/**
 * A forwarded field the request's own `Connection` may name (RFC 9110 §7.6.1: then it is for the gateway alone): none, Accept-Language
 * named by a `Connection` line of its own (never forwarded), or Accept-Language not named (forwarded as sent). Requests of one
 * connection differ, so a gateway that reused one request's list for the next would forward or drop the wrong field.
 */
export const HOP_FIELDS: ReadonlyArray<{ lines: string; hop?: 'listed' | 'unlisted' }> = [
  { lines: '' },
  { lines: 'Accept-Language: de\r\nConnection: Accept-Language\r\n', hop: 'listed' },
  { lines: 'Accept-Language: de\r\n', hop: 'unlisted' },
];
/** What an unlisted Accept-Language says, as the upstream must receive it. */
export const HOP_FIELD_VALUE = 'de';

/** The origin the harness gateway allows (its `cors.allowedOrigins`), and one it does not. */
export const HARNESS_ORIGIN = 'http://shop.test:8000';
const OTHER_ORIGIN = 'http://elsewhere.test';
/** The Origin a client's request may carry: none, the allowed one, another. */
export const ORIGINS: readonly string[] = ['', HARNESS_ORIGIN, OTHER_ORIGIN];

export interface RequestSpec {
  kind: RequestKind;
  limit: number | undefined;
  status: 'available' | 'pending' | 'sold' | undefined;
  petId: number;
  name: string;
  categoryId: number;
  /** Chunks of a chunked body. */
  chunks: number;
  /** `Connection: close` (honoured on a client's last request only: nothing after it would be read). */
  close: boolean;
  /** An index into TRACE_CONTEXTS (absent in fixtures written before trace context: none sent). */
  trace?: number;
  /** An index into ORIGINS (absent in fixtures written before CORS: none sent); preflights use it too. */
  origin?: number;
  /** An index into HOP_FIELDS (absent in fixtures written before it: none sent). */
  hop?: number;
}

export const requestSpec: fc.Arbitrary<RequestSpec> = fc.record({
  kind: fc.constantFrom(...REQUEST_KINDS),
  limit: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
  status: fc.option(fc.constantFrom('available' as const, 'pending' as const, 'sold' as const), { nil: undefined }),
  petId: fc.integer({ min: 1, max: 99_999 }),
  name: fc.stringMatching(/^[A-Za-z]{1,10}$/),
  categoryId: fc.integer({ min: 0, max: 1000 }),
  chunks: fc.integer({ min: 1, max: 3 }),
  close: fc.boolean(),
  trace: fc.integer({ min: 0, max: TRACE_CONTEXTS.length - 1 }),
  origin: fc.integer({ min: 0, max: ORIGINS.length - 1 }),
  hop: fc.integer({ min: 0, max: HOP_FIELDS.length - 1 }),
});

/** A part of a client's bytes; a part that waits for something starts a new write. */
export interface Segment {
  text: string;
  afterContinues?: boolean;
}

export interface BuiltRequest {
  method: 'GET' | 'HEAD' | 'POST' | 'OPTIONS';
  target: string;
  body: string;
  valid: boolean;
  segments: Segment[];
  /** The trace the upstream's `traceparent` must continue, when the client sent a valid one. */
  trace?: { traceId: string; sampled: boolean };
  /** The Access-Control-Allow-Origin its answer must carry; absent: none. */
  allowOrigin?: string;
  /** The client closes its connection right after these bytes, before the request ended: it is never sent whole. */
  leaves?: boolean;
  /** It sent Accept-Language named by its Connection (never forwarded), or not named (forwarded as sent). */
  hop?: 'listed' | 'unlisted';
}

function listTarget(spec: RequestSpec): string {
  const query = [spec.limit === undefined ? '' : `limit=${spec.limit}`, spec.status === undefined ? '' : `status=${spec.status}`].filter(Boolean).join('&');
  return query === '' ? '/v1/pets' : `/v1/pets?${query}`;
}

function chunked(body: string, chunks: number): string {
  const size = Math.ceil(body.length / chunks);
  let out = '';
  for (let at = 0; at < body.length; at += size) {
    const part = body.slice(at, at + size);
    out += `${part.length.toString(16)}\r\n${part}\r\n`;
  }
  return `${out}0\r\n\r\n`;
}

/** The bytes of one request; `last` says whether it may ask for Connection: close. */
export function buildRequest(spec: RequestSpec, tag: string, last: boolean): BuiltRequest {
  const built = buildBytes(spec, tag, last);
  const trace = TRACE_CONTEXTS[spec.trace ?? 0]!;
  const { hop } = HOP_FIELDS[spec.hop ?? 0]!;
  return {
    ...built,
    ...(trace.traceId === undefined ? {} : { trace: { traceId: trace.traceId, sampled: trace.sampled === true } }),
    ...(hop === undefined ? {} : { hop }),
    ...(originOf(spec) === HARNESS_ORIGIN ? { allowOrigin: HARNESS_ORIGIN } : {}),
  };
}

/** A preflight always names an origin (the allowed one, or another); other requests any of ORIGINS. */
function originOf(spec: RequestSpec): string {
  if (spec.kind === 'preflight') return HARNESS_ORIGIN;
  if (spec.kind === 'preflightOther') return OTHER_ORIGIN;
  return ORIGINS[spec.origin ?? 0]!;
}

function buildBytes(spec: RequestSpec, tag: string, last: boolean): BuiltRequest {
  const origin = originOf(spec);
  const traceLines = TRACE_CONTEXTS[spec.trace ?? 0]!.lines + (origin === '' ? '' : `Origin: ${origin}\r\n`) + HOP_FIELDS[spec.hop ?? 0]!.lines;
  const head = (method: string, target: string, extra: string) =>
    `${method} ${target} HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer ${KEY_PLACEHOLDER}\r\nX-Request-Id: ${tag}\r\n${traceLines}${extra}` +
    `${spec.close && last ? 'Connection: close\r\n' : ''}\r\n`;
  const pet = `{"name":"${spec.name}","categoryId":${spec.categoryId}${spec.status === undefined ? '' : `,"status":"${spec.status}"`}}`;
  const json = 'Content-Type: application/json\r\n';
  const whole = (method: BuiltRequest['method'], target: string, extra: string, body: string, valid: boolean): BuiltRequest => ({
    method,
    target,
    body,
    valid,
    segments: [{ text: head(method, target, extra) + body }],
  });
  switch (spec.kind) {
    case 'list':
      return whole('GET', listTarget(spec), '', '', true);
    case 'listHead':
      return whole('HEAD', listTarget(spec), '', '', true);
    case 'listEmptyBody':
      return whole('GET', listTarget(spec), 'Content-Length: 0\r\n', '', true);
    case 'get':
      return whole('GET', `/v1/pets/${spec.petId}`, '', '', true);
    case 'getHead':
      return whole('HEAD', `/v1/pets/${spec.petId}`, '', '', true);
    case 'create':
      return whole('POST', '/v1/pets', `${json}Content-Length: ${pet.length}\r\n`, pet, true);
    case 'createChunked':
      return {
        method: 'POST',
        target: '/v1/pets',
        body: pet,
        valid: true,
        segments: [{ text: head('POST', '/v1/pets', `${json}Transfer-Encoding: chunked\r\n`) + chunked(pet, spec.chunks) }],
      };
    case 'createExpectNow':
      return whole('POST', '/v1/pets', `${json}Content-Length: ${pet.length}\r\nExpect: 100-continue\r\n`, pet, true);
    case 'createExpectWait':
      return {
        method: 'POST',
        target: '/v1/pets',
        body: pet,
        valid: true,
        segments: [{ text: head('POST', '/v1/pets', `${json}Content-Length: ${pet.length}\r\nExpect: 100-continue\r\n`) }, { text: pet, afterContinues: true }],
      };
    case 'badQuery':
      return whole('GET', '/v1/pets?limit=0', '', '', false);
    case 'badPath':
      return whole('GET', '/v1/nowhere', '', '', false);
    // A browser's preflight carries no key; one that does is a preflight all the same. Answered by the
    // gateway (allowed origin: 204) or refused (another: 405, with the key), never forwarded.
    case 'preflight':
    case 'preflightOther':
      return whole('OPTIONS', '/v1/pets', 'Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: authorization, content-type\r\n', '', false);
    case 'fragment':
      return whole('GET', `${listTarget(spec)}#top`, '', '', false);
    case 'absoluteOther': {
      // Host says gw.test; the authority, which wins (RFC 9112 §3.2.2), names another host.
      const built = whole('GET', listTarget(spec), '', '', true);
      return { ...built, segments: [{ text: built.segments[0]!.text.replace(' /v1/pets', ' http://other.test:8443/v1/pets') }] };
    }
    // Leaves after the head: waiting for 100 Continue (it may come after the client is gone).
    case 'createExpectLeave':
      return { ...whole('POST', '/v1/pets', `${json}Content-Length: ${pet.length}\r\nExpect: 100-continue\r\n`, '', true), leaves: true };
    // Leaves halfway through a Content-Length body.
    case 'createPartialLeave':
      return { ...whole('POST', '/v1/pets', `${json}Content-Length: ${pet.length}\r\n`, pet.slice(0, pet.length >> 1), true), leaves: true };
    // Leaves inside a chunk of a chunked body.
    case 'createChunkedCut': {
      const cut = chunked(pet, spec.chunks).slice(0, -8);
      return { ...whole('POST', '/v1/pets', `${json}Transfer-Encoding: chunked\r\n`, cut, true), leaves: true };
    }
    case 'badBody': {
      const bad = `{"name":${spec.categoryId}}`;
      return whole('POST', '/v1/pets', `${json}Content-Length: ${bad.length}\r\n`, bad, false);
    }
  }
}

/**
 * Bytes Node's parser refuses as soon as it reads them (never bytes that merely wait for more, which
 * would be a slow client, not a malformed one), and within the head: a well-formed head with a broken
 * body is a request, which the gateway may refuse before its body arrives (a 401, say), so it is not
 * "bytes that do not parse".
 */
export const GARBAGE = [
  '\x00\x01\x02 garbage\r\n\r\n',
  'GET /v1/pets HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n',
  'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'GET /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
  'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n',
  // CONNECT is not parse garbage, but it ends the connection the same way: one 400 Error body after the complete requests.
  'CONNECT upstream.test:443 HTTP/1.1\r\nHost: upstream.test:443\r\n\r\n',
  'CONNECT /v1/pets HTTP/1.1\r\nHost: gw.test\r\n\r\n',
] as const;
