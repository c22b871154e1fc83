// node bench/micro/span-encoding.ts [make|encode]: a traced request's spans (SERVER, authenticate, rate_limit
// with its redis wait, CLIENT) recorded as the gateway's stages record them, and with `encode` encoded for
// OTLP/protobuf as the request completes and sent in requests of 512 spans, in a loop: µs per request, median
// of 9 rounds. For iterating on the span path (decisions 0008 and 0014); bench/tracecost.ts measures the whole gateway.
import type { IncomingMessage } from 'node:http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, ParentBasedSampler } from '@opentelemetry/sdk-trace';
import { ProtobufSpans } from '../../src/tracing/otlp-protobuf.ts';
import { recordingTracing } from '../../src/tracing/tracer.ts';

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

function request() {
  const slice = tracing.begin(arriving, '/v1/pets');
  const record = slice.spans!;
  record.startAuthenticate();
  record.keyCacheAnswered('hit');
  record.endLookup();
  record.endAuthenticate('ok');
  record.startRateLimit(true);
  record.endRateLimit('allowed');
  const exchange = tracing.startExchange(slice, 'GET', 'http://127.0.0.1:3000/v1/pets?limit=20');
  exchange.end({ status: 200 });
  tracing.end(slice, outcome);
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
