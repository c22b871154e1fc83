// The protobuf span encoder against the OTLP specification: what it writes for a request's spans is decoded
// with a decoder made from the OTLP .proto files (test/fixtures/otlp-proto, as opentelemetry-js tests its
// own serializer), and every field a collector reads is what the record says.
import { fileURLToPath } from 'node:url';
import { TraceFlags } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { ProtobufSpans } from '../../../src/tracing/otlp-protobuf.ts';
import { RequestSpans, type ServerArrival, type SpanTrace, traceIdOf } from '../../../src/tracing/request-spans.ts';
import { noStageFacts } from '../../helpers/stage-facts.ts';

const PROTO_ROOT = fileURLToPath(new URL('../../fixtures/otlp-proto/', import.meta.url));

/** ExportTraceServiceRequest, from the .proto files (their imports resolved from the fixture's root). */
function exportRequestType(): protobuf.Type {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => PROTO_ROOT + target;
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  return root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
}

/**
 * Decoded as plain objects, fields at their proto3 default (0, empty) left out as the specification treats
 * them: 64-bit integers as decimal strings (nanoseconds pass 2^53), enums by name, bytes in hex.
 */
function decode(bytes: Uint8Array): DecodedRequest {
  const type = exportRequestType();
  const message = type.decode(bytes);
  const object = type.toObject(message, { longs: String, enums: String, bytes: String });
  return JSON.parse(JSON.stringify(object), (key, value) =>
    ['traceId', 'spanId', 'parentSpanId'].includes(key) ? Buffer.from(value as string, 'base64').toString('hex') : value,
  ) as DecodedRequest;
}

type AnyValue = Record<string, unknown>;
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface DecodedSpan {
  traceId: string;
  spanId: string;
  traceState?: string;
  parentSpanId?: string;
  flags: number;
  name: string;
  kind: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: KeyValue[];
  status: { message?: string; code?: string };
}
interface DecodedRequest {
  resourceSpans: {
    resource: { attributes: KeyValue[] };
    scopeSpans: { scope: { name: string; version: string }; spans: DecodedSpan[]; schemaUrl?: string }[];
    schemaUrl?: string;
  }[];
}

const str = (key: string, stringValue: string): KeyValue => ({ key, value: { stringValue } });
const int = (key: string, intValue: number | bigint): KeyValue => ({ key, value: { intValue: String(intValue) } });

/** Every request's times are offsets in milliseconds from T, quarters of one (exact in a double). */
const T = 1_764_000_000_123.25;
/** T + `offsetMs` in nanoseconds since the epoch, computed in integers. */
const ns = (offsetMs: number) => String(1_764_000_000_123_250_000n + BigInt(offsetMs * 1_000_000));

/** A request's spans begun at `startMs` with its trace and arrival; its ids, slots and outcome are then written directly. */
function requestSpans(trace: SpanTrace, arrival: ServerArrival, startMs: number): RequestSpans {
  const start = { trace, arrival, serverHigh: 0, serverLow: 1, clientHigh: 0, clientLow: 1, startMs };
  const outcome = { statusCode: 0, route: undefined, operationId: undefined, keyId: undefined, errorCode: undefined };
  return new RequestSpans(start, noStageFacts(), outcome, startMs, 0);
}

/** A span id's two words from its hex. */
const words = (hex: string) => [Number.parseInt(hex.slice(0, 8), 16), Number.parseInt(hex.slice(8), 16)] as const;

/**
 * A request's record as the stages leave it, every slot written directly (the ids and times fixed): continued
 * from a client (remote parent and trace state), a key cache miss and its Redis lookup, the Redis-shared
 * limit, an upstream answering 503; non-ASCII in the path and the key id.
 */
function continuedRequest(): RequestSpans {
  const [parentHigh, parentLow] = words('00f067aa0ba902b7');
  const record = requestSpans(
    {
      traceId: traceIdOf('4bf92f3577b34da6a3ce929d0e0e4736'),
      remoteParent: [parentHigh, parentLow],
      traceFlags: TraceFlags.SAMPLED,
      traceState: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
    },
    { method: 'GET', scheme: 'https', path: '/v1/pets/chat-noir-ü-日本', host: { host: 'gateway.example', port: 8443 } },
    T,
  );
  return Object.assign(record, {
    serverHigh: 0x11111111,
    serverLow: 0x11111112,
    ...slot('auth', '2222222222222222', 0.25, 1.5),
    keyCache: 'miss',
    authResult: 'ok',
    ...slot('lookup', '3333333333333333', 0.5, 1.25),
    ...slot('rateLimit', '4444444444444444', 1.75, 3),
    rateLimitOutcome: 'allowed',
    ...slot('count', '5555555555555555', 2, 2.75),
    ...slot('client', '6666666666666666', 3.25, 9.5),
    clientMethod: 'GET',
    clientOrigin: { hostname: '10.0.0.7', port: 4010, origin: 'http://10.0.0.7:4010', originLength: 20 },
    clientPath: '/pets/chat-noir-ü-日本',
    clientStatus: 503,
    outcome: { statusCode: 503, route: '/v1/pets/{petId}', operationId: 'showPetById', keyId: 'clé_ünïcode_01', errorCode: 'UPSTREAM_UNAVAILABLE' },
    endMs: T + 10,
  });
}

/** A trace begun here: the key cache answered, the limit's Redis failed (the policy let it through), the upstream timed out. */
function ownTraceRequest(): RequestSpans {
  const record = requestSpans(
    { traceId: traceIdOf('00000000000000000000000000000a01'), remoteParent: undefined, traceFlags: TraceFlags.SAMPLED, traceState: undefined },
    { method: 'POST', scheme: 'http', path: '/v1/pets', host: { host: 'localhost' } },
    T + 20,
  );
  return Object.assign(record, {
    serverHigh: 0,
    serverLow: 1,
    ...slot('auth', '0000000100000002', 20.25, 20.5),
    keyCache: 'hit',
    authResult: 'ok',
    ...slot('rateLimit', 'fffffffffffffffe', 20.5, 22),
    rateLimitOutcome: 'store_unavailable',
    onStoreError: 'allow',
    ...slot('count', 'ffffffffffffffff', 20.5, 22),
    countErrorType: 'MaxRetriesPerRequestError',
    ...slot('client', '8000000000000000', 22.25, 5022.25),
    clientMethod: 'POST',
    clientOrigin: { hostname: 'pets.internal', port: 443, origin: 'https://pets.internal', originLength: 21 },
    clientPath: '/pets',
    clientFailure: 'timeout',
    outcome: { statusCode: 504, route: '/v1/pets', operationId: 'createPet', keyId: 'key_0123456789ab', errorCode: 'UPSTREAM_TIMEOUT' },
    endMs: T + 5022.5,
  });
}

/** A method semantic conventions do not name, no Host, and the key store down: refused before any route matched. */
function refusedRequest(): RequestSpans {
  const record = requestSpans(
    { traceId: traceIdOf('ffffffffffffffffffffffffffffffff'), remoteParent: undefined, traceFlags: TraceFlags.SAMPLED, traceState: undefined },
    { method: 'BREW', scheme: 'http', path: '/', host: {} },
    T + 6000,
  );
  return Object.assign(record, {
    serverHigh: 0x7fffffff,
    serverLow: 0xffffffff,
    ...slot('auth', 'abcdef0123456789', 6000.25, 6000.75),
    keyCache: 'miss',
    authResult: 'store_unavailable',
    ...slot('lookup', '0123456789abcdef', 6000.25, 6000.5),
    lookupErrorType: 'ECONNREFUSED',
    outcome: { statusCode: 503, route: undefined, operationId: undefined, keyId: undefined, errorCode: 'KEY_STORE_UNAVAILABLE' },
    endMs: T + 6001,
  });
}

/** A stage's slot: its span id (two words), its start and end (offsets from T). */
function slot(stage: 'auth' | 'lookup' | 'rateLimit' | 'count' | 'client', id: string, startMs: number, endMs: number): Record<string, number> {
  const [high, low] = words(id);
  return { [`${stage}High`]: high, [`${stage}Low`]: low, [`${stage}StartMs`]: T + startMs, [`${stage}EndMs`]: T + endMs };
}

/** A span as decoded: no events or links, nothing dropped, its status UNSET (0, so absent) unless given. */
function span(fields: {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  flags: number;
  name: string;
  kind: string;
  start: number;
  end: number;
  attributes: KeyValue[];
  status?: { code: string; message?: string };
}): DecodedSpan {
  return {
    traceId: fields.traceId,
    spanId: fields.spanId,
    ...(fields.traceState === undefined ? {} : { traceState: fields.traceState }),
    ...(fields.parentSpanId === undefined ? {} : { parentSpanId: fields.parentSpanId }),
    flags: fields.flags,
    name: fields.name,
    kind: fields.kind,
    startTimeUnixNano: ns(fields.start),
    endTimeUnixNano: ns(fields.end),
    attributes: fields.attributes,
    status: fields.status ?? {},
  };
}

/** Span.flags: sampled (W3C flag 1), with whether the parent is remote known (0x100) and true (0x200). */
const LOCAL_PARENT = 0x101;
const REMOTE_PARENT = 0x301;
const ERROR = 'STATUS_CODE_ERROR';

describe('OTLP/protobuf, decoded from the .proto', () => {
  const resource = resourceFromAttributes({
    'service.name': 'petstore-gateway',
    'service.version': '1.4.0',
    'deployment.environment.name': 'préprod',
    // Attributes an operator may give the resource: past 32 bits, negative, fractional, boolean, a list.
    'host.big': 2 ** 53 - 1,
    'host.negative': -42,
    'host.ratio': 0.25,
    'host.virtual': true,
    'host.tags': ['a', 'b'],
  });
  const scope = { name: 'petstore-gateway', version: '1.4.0' };

  function encoded(records: RequestSpans[]): DecodedRequest {
    const encoding = new ProtobufSpans(resource, scope);
    const queue: number[] = [];
    for (const record of records) encoding.encode(record, queue);
    return decode(encoding.request(queue));
  }

  it('writes one resource and one scope, with their attributes', () => {
    const [resourceSpans, ...others] = encoded([refusedRequest()]).resourceSpans;
    expect(others).toEqual([]);
    expect(resourceSpans!.resource).toEqual({
      attributes: [
        str('service.name', 'petstore-gateway'),
        str('service.version', '1.4.0'),
        str('deployment.environment.name', 'préprod'),
        int('host.big', 2n ** 53n - 1n),
        int('host.negative', -42),
        { key: 'host.ratio', value: { doubleValue: 0.25 } },
        { key: 'host.virtual', value: { boolValue: true } },
        { key: 'host.tags', value: { arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] } } },
      ],
    });
    expect(resourceSpans!.schemaUrl).toBeUndefined();
    expect(resourceSpans!.scopeSpans).toHaveLength(1);
    expect(resourceSpans!.scopeSpans[0]!.scope).toEqual({ name: 'petstore-gateway', version: '1.4.0' });
    expect(resourceSpans!.scopeSpans[0]!.schemaUrl).toBeUndefined();
  });

  it("writes a continued request's six spans: ids, parents, trace state, names, kinds, times, attributes, statuses", () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const traceState = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE';
    const server = '1111111111111112';
    const common = { traceId, traceState, flags: LOCAL_PARENT };
    expect(encoded([continuedRequest()]).resourceSpans[0]!.scopeSpans[0]!.spans).toEqual([
      span({
        ...common,
        spanId: '3333333333333333',
        parentSpanId: '2222222222222222',
        name: 'redis',
        kind: 'SPAN_KIND_CLIENT',
        start: 0.5,
        end: 1.25,
        attributes: [str('db.system.name', 'redis'), str('gateway.redis.command', 'key_lookup')],
      }),
      span({
        ...common,
        spanId: '2222222222222222',
        parentSpanId: server,
        name: 'authenticate',
        kind: 'SPAN_KIND_INTERNAL',
        start: 0.25,
        end: 1.5,
        attributes: [str('gateway.auth.key_cache', 'miss'), str('gateway.auth.result', 'ok')],
      }),
      span({
        ...common,
        spanId: '5555555555555555',
        parentSpanId: '4444444444444444',
        name: 'redis',
        kind: 'SPAN_KIND_CLIENT',
        start: 2,
        end: 2.75,
        attributes: [str('db.system.name', 'redis'), str('gateway.redis.command', 'rate_limit_increment')],
      }),
      span({
        ...common,
        spanId: '4444444444444444',
        parentSpanId: server,
        name: 'rate_limit',
        kind: 'SPAN_KIND_INTERNAL',
        start: 1.75,
        end: 3,
        attributes: [str('gateway.rate_limit.decision', 'allowed')],
      }),
      span({
        ...common,
        spanId: '6666666666666666',
        parentSpanId: server,
        name: 'GET',
        kind: 'SPAN_KIND_CLIENT',
        start: 3.25,
        end: 9.5,
        attributes: [
          str('http.request.method', 'GET'),
          str('server.address', '10.0.0.7'),
          int('server.port', 4010),
          str('url.full', 'http://10.0.0.7:4010/pets/chat-noir-ü-日本'),
          int('http.response.status_code', 503),
          str('error.type', '503'),
        ],
        status: { code: ERROR },
      }),
      span({
        ...common,
        flags: REMOTE_PARENT,
        spanId: server,
        parentSpanId: '00f067aa0ba902b7',
        name: 'GET /v1/pets/{petId}',
        kind: 'SPAN_KIND_SERVER',
        start: 0,
        end: 10,
        attributes: [
          str('http.request.method', 'GET'),
          str('url.scheme', 'https'),
          str('url.path', '/v1/pets/chat-noir-ü-日本'),
          str('server.address', 'gateway.example'),
          int('server.port', 8443),
          str('http.route', '/v1/pets/{petId}'),
          int('http.response.status_code', 503),
          str('gateway.operation', 'showPetById'),
          str('gateway.key_id', 'clé_ünïcode_01'),
          str('gateway.error_code', 'UPSTREAM_UNAVAILABLE'),
          str('error.type', '503'),
        ],
        status: { code: ERROR, message: 'UPSTREAM_UNAVAILABLE' },
      }),
    ]);
  });

  it("writes a trace begun here: no parent on its SERVER span, no trace state, the failed stages' errors", () => {
    const traceId = '00000000000000000000000000000a01';
    const server = '0000000000000001';
    const common = { traceId, flags: LOCAL_PARENT };
    expect(encoded([ownTraceRequest()]).resourceSpans[0]!.scopeSpans[0]!.spans).toEqual([
      span({
        ...common,
        spanId: '0000000100000002',
        parentSpanId: server,
        name: 'authenticate',
        kind: 'SPAN_KIND_INTERNAL',
        start: 20.25,
        end: 20.5,
        attributes: [str('gateway.auth.key_cache', 'hit'), str('gateway.auth.result', 'ok')],
      }),
      span({
        ...common,
        spanId: 'ffffffffffffffff',
        parentSpanId: 'fffffffffffffffe',
        name: 'redis',
        kind: 'SPAN_KIND_CLIENT',
        start: 20.5,
        end: 22,
        attributes: [str('db.system.name', 'redis'), str('gateway.redis.command', 'rate_limit_increment'), str('error.type', 'MaxRetriesPerRequestError')],
        status: { code: ERROR },
      }),
      span({
        ...common,
        spanId: 'fffffffffffffffe',
        parentSpanId: server,
        name: 'rate_limit',
        kind: 'SPAN_KIND_INTERNAL',
        start: 20.5,
        end: 22,
        attributes: [str('gateway.rate_limit.decision', 'store_unavailable'), str('gateway.rate_limit.on_store_error', 'allow')],
        status: { code: ERROR, message: 'the rate-limit store cannot count' },
      }),
      span({
        ...common,
        spanId: '8000000000000000',
        parentSpanId: server,
        name: 'POST',
        kind: 'SPAN_KIND_CLIENT',
        start: 22.25,
        end: 5022.25,
        attributes: [
          str('http.request.method', 'POST'),
          str('server.address', 'pets.internal'),
          int('server.port', 443),
          str('url.full', 'https://pets.internal/pets'),
          str('error.type', 'timeout'),
        ],
        status: { code: ERROR, message: 'timeout' },
      }),
      span({
        ...common,
        spanId: server,
        name: 'POST /v1/pets',
        kind: 'SPAN_KIND_SERVER',
        start: 20,
        end: 5022.5,
        attributes: [
          str('http.request.method', 'POST'),
          str('url.scheme', 'http'),
          str('url.path', '/v1/pets'),
          str('server.address', 'localhost'),
          str('http.route', '/v1/pets'),
          int('http.response.status_code', 504),
          str('gateway.operation', 'createPet'),
          str('gateway.key_id', 'key_0123456789ab'),
          str('gateway.error_code', 'UPSTREAM_TIMEOUT'),
          str('error.type', '504'),
        ],
        status: { code: ERROR, message: 'UPSTREAM_TIMEOUT' },
      }),
    ]);
  });

  it('writes a refusal before any route matched, of a method semantic conventions do not name, after the ones queued before it', () => {
    const traceId = 'ffffffffffffffffffffffffffffffff';
    const server = '7fffffffffffffff';
    const common = { traceId, flags: LOCAL_PARENT };
    const spans = encoded([continuedRequest(), ownTraceRequest(), refusedRequest()]).resourceSpans[0]!.scopeSpans[0]!.spans;
    expect(spans.map(({ traceId }) => traceId.slice(-4))).toEqual([...Array(6).fill('4736'), ...Array(5).fill('0a01'), ...Array(3).fill('ffff')]);
    expect(spans.slice(11)).toEqual([
      span({
        ...common,
        spanId: '0123456789abcdef',
        parentSpanId: 'abcdef0123456789',
        name: 'redis',
        kind: 'SPAN_KIND_CLIENT',
        start: 6000.25,
        end: 6000.5,
        attributes: [str('db.system.name', 'redis'), str('gateway.redis.command', 'key_lookup'), str('error.type', 'ECONNREFUSED')],
        status: { code: ERROR },
      }),
      span({
        ...common,
        spanId: 'abcdef0123456789',
        parentSpanId: server,
        name: 'authenticate',
        kind: 'SPAN_KIND_INTERNAL',
        start: 6000.25,
        end: 6000.75,
        attributes: [str('gateway.auth.key_cache', 'miss'), str('gateway.auth.result', 'store_unavailable')],
        status: { code: ERROR, message: 'API keys cannot be checked' },
      }),
      span({
        ...common,
        spanId: server,
        name: 'HTTP',
        kind: 'SPAN_KIND_SERVER',
        start: 6000,
        end: 6001,
        attributes: [
          str('http.request.method', '_OTHER'),
          str('url.scheme', 'http'),
          str('url.path', '/'),
          int('http.response.status_code', 503),
          str('gateway.error_code', 'KEY_STORE_UNAVAILABLE'),
          str('error.type', '503'),
        ],
        status: { code: ERROR, message: 'KEY_STORE_UNAVAILABLE' },
      }),
    ]);
  });
});
