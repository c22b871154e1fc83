// node bench/micro/span-encoding.ts [make|encode]: a traced request's five spans (SERVER, authenticate,
// rate_limit with its redis wait, CLIENT) made by the gateway's LeanTracer, and with `encode` each encoded for
// OTLP/protobuf as it ends and sent in requests of 512, in a loop: µs per request, median of 9 rounds. For iterating on the span path
// (decision 0008); bench/tracecost.ts measures the whole gateway.
import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, ParentBasedSampler } from '@opentelemetry/sdk-trace';
import { type LeanSpan, LeanTracer } from '../../src/tracing/lean-tracer.ts';
import { ProtobufSpans } from '../../src/tracing/otlp-protobuf.ts';

const resource = resourceFromAttributes({ 'service.name': 'petstore-gateway', 'service.version': '1.0.0' });
const scope = { name: 'petstore-gateway', version: '1.0.0' };
const enc = new ProtobufSpans(resource, scope);
const mode = process.argv[2] === 'make' ? 'make' : 'encode';
let bytes = 0;
// Queued as the span batch queues them, and taken off in batches of the default size (512), as it sends them.
let queued: number[] = [];
const tracer = new LeanTracer(
  resource,
  scope,
  new ParentBasedSampler({ root: new AlwaysOnSampler() }),
  {
    onEnd: (s) => {
      if (mode !== 'encode') return;
      queued.push(enc.span(s));
      if (queued.length === 512) {
        bytes += enc.request(queued).length;
        queued = [];
      }
    },
  },
  { childrenFollowParent: true },
);
function request() {
  const server = tracer.startSpan(
    'GET',
    {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': 'GET', 'url.scheme': 'http', 'url.path': '/v1/pets', 'server.address': '127.0.0.1', 'server.port': 8080 },
    },
    ROOT_CONTEXT,
  ) as LeanSpan;
  server.spanContext(); // read on arrival, as the gateway does (the access log's ids)
  const auth = tracer.startChild(server, 'authenticate', SpanKind.INTERNAL, { 'gateway.auth.key_cache': 'hit' });
  auth.setAttribute('gateway.auth.result', 'ok');
  auth.end();
  const rl = tracer.startChild(server, 'rate_limit', SpanKind.INTERNAL) as LeanSpan;
  const redis = tracer.startChild(rl, 'redis', SpanKind.CLIENT, { 'db.system.name': 'redis', 'gateway.redis.command': 'rate_limit_increment' });
  redis.end();
  rl.setAttribute('gateway.rate_limit.decision', 'allowed');
  rl.end();
  const client = tracer.startChild(server, 'GET', SpanKind.CLIENT, {
    'http.request.method': 'GET',
    'server.address': '127.0.0.1',
    'server.port': 3000,
    'url.full': 'http://127.0.0.1:3000/v1/pets',
  });
  client.spanContext(); // the upstream's traceparent
  client.setAttribute('http.response.status_code', 200);
  client.end();
  server.updateName('GET /v1/pets');
  server.setAttribute('http.route', '/v1/pets');
  server.setAttribute('http.response.status_code', 200);
  server.setAttribute('gateway.operation', 'listPets');
  server.setAttribute('gateway.key_id', 'key_0123456789ab');
  server.end();
}
const N = 50000;
const results: number[] = [];
for (let round = 0; round < 9; round++) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) request();
  results.push(Number(process.hrtime.bigint() - t) / N / 1000);
}
results.sort((a, b) => a - b);
console.log(`${mode}: median ${results[4]!.toFixed(2)} µs/req (min ${results[0]!.toFixed(2)}); ${bytes / N / 9 / 5} bytes/span`);
