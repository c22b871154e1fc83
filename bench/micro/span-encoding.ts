// node bench/micro/span-encoding.ts [make|encode]: a traced request's five spans (SERVER, authenticate,
// rate_limit with its redis wait, CLIENT) made by the gateway's LeanTracer, and with `encode` each encoded for
// OTLP/protobuf as it ends, in a loop: µs per request, median of 9 rounds. For iterating on the span path
// (decision 0008); bench/tracecost.ts measures the whole gateway.
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, ParentBasedSampler } from '@opentelemetry/sdk-trace';
import { LeanTracer } from '../../src/tracing/lean-tracer.ts';
import { ProtobufSpans } from '../../src/tracing/otlp-protobuf.ts';

const resource = resourceFromAttributes({ 'service.name': 'petstore-gateway', 'service.version': '1.0.0' });
const scope = { name: 'petstore-gateway', version: '1.0.0' };
const enc = new ProtobufSpans(resource, scope);
const mode = process.argv[2] === 'make' ? 'make' : 'encode';
let bytes = 0;
const tracer = new LeanTracer(resource, scope, new ParentBasedSampler({ root: new AlwaysOnSampler() }), {
  onEnd: (s) => {
    if (mode === 'encode') bytes += enc.span(s).length;
  },
});
function request() {
  const server = tracer.startSpan(
    'GET',
    {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': 'GET', 'url.scheme': 'http', 'url.path': '/v1/pets', 'server.address': '127.0.0.1', 'server.port': 8080 },
    },
    ROOT_CONTEXT,
  );
  const ctx = trace.setSpan(ROOT_CONTEXT, server);
  const auth = tracer.startSpan('authenticate', { kind: SpanKind.INTERNAL, attributes: { 'gateway.auth.key_cache': 'hit' } }, ctx);
  auth.setAttribute('gateway.auth.result', 'ok');
  auth.end();
  const rl = tracer.startSpan('rate_limit', { kind: SpanKind.INTERNAL }, ctx);
  const redis = tracer.startSpan(
    'redis',
    { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'redis', 'gateway.redis.command': 'rate_limit_increment' } },
    trace.setSpan(ROOT_CONTEXT, rl),
  );
  redis.end();
  rl.setAttribute('gateway.rate_limit.decision', 'allowed');
  rl.end();
  const client = tracer.startSpan(
    'GET',
    {
      kind: SpanKind.CLIENT,
      attributes: { 'http.request.method': 'GET', 'server.address': '127.0.0.1', 'server.port': 3000, 'url.full': 'http://127.0.0.1:3000/v1/pets' },
    },
    ctx,
  );
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
