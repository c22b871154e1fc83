// node bench/micro/span-encoding.ts [make|encode]: a traced request's spans (SERVER, authenticate, rate_limit
// with its redis wait, CLIENT) recorded as the gateway's stages record them, and with `encode` encoded for
// OTLP/protobuf as the request completes and sent in requests of 512 spans, in a loop: µs per request, median
// of 9 rounds. For iterating on the span path (decisions 0008 and 0014); bench/tracecost.ts measures the whole gateway.
import type { IncomingMessage } from 'node:http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, ParentBasedSampler } from '@opentelemetry/sdk-trace';
import { ProtobufSpans } from '../../src/tracing/otlp-protobuf.ts';
import { recordingTracing, type TracedRecord } from '../../src/tracing/tracer.ts';

const resource = resourceFromAttributes({ 'service.name': 'petstore-gateway', 'service.version': '1.0.0' });
const scope = { name: 'petstore-gateway', version: '1.0.0' };
const encoding = new ProtobufSpans(resource, scope);
const mode = process.argv[2] === 'make' ? 'make' : 'encode';
let bytes = 0;
let spans = 0;
// Queued as the span batch queues them, and taken off in batches of the default size (512), as it sends them.
let queued: number[] = [];
const tracing = recordingTracing(
  new ParentBasedSampler({ root: new AlwaysOnSampler() }),
  {
    onEnd: (request) => {
      if (mode !== 'encode') return;
      encoding.encode(request, queued);
      if (queued.length >= 512) {
        spans += queued.length;
        bytes += encoding.request(queued).length;
        queued = [];
      }
    },
  },
  { shutdown: () => Promise.resolve(), droppedSpans: () => 0 },
);
const arriving = { method: 'GET', headers: { host: '127.0.0.1:8080' }, socket: {} } as unknown as IncomingMessage;
const outcome = { statusCode: 200, route: '/v1/pets', operationId: 'listPets', keyId: 'key_0123456789ab', errorCode: undefined };

const origin = { hostname: '127.0.0.1', port: 3000, origin: 'http://127.0.0.1:3000' };

function request() {
  const trace = tracing.begin(arriving, '/v1/pets');
  // The facts the stages write into the record: a key cache hit, the exact store, an upstream 200.
  const at = performance.now();
  const record: TracedRecord = {
    trace,
    authStartMs: at,
    authEndMs: at + 0.01,
    keyCache: 'hit',
    lookupStartMs: 0,
    lookupEndMs: 0,
    lookupError: undefined,
    authResult: 'ok',
    rateLimitStartMs: at + 0.02,
    rateLimitEndMs: at + 0.03,
    rateLimitOutcome: 'allowed',
    rateLimitWaitedForRedis: true,
    rateLimitStoreError: undefined,
    onStoreError: undefined,
    quota: undefined,
    exchangeStartMs: at + 0.04,
    exchangeEndMs: at + 0.05,
    exchangeMethod: 'GET',
    exchangeOrigin: origin,
    exchangePath: '/v1/pets?limit=20',
    upstream: { status: 200 },
  };
  tracing.end(record, outcome);
}

const N = 50000;
const results: number[] = [];
for (let round = 0; round < 9; round++) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) request();
  results.push(Number(process.hrtime.bigint() - t) / N / 1000);
}
results.sort((a, b) => a - b);
console.log(`${mode}: median ${results[4]!.toFixed(2)} µs/req (min ${results[0]!.toFixed(2)}); ${spans === 0 ? 0 : (bytes / spans).toFixed(1)} bytes/span`);
