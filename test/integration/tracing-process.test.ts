// The gateway process as an operator starts it with the OpenTelemetry variables: spans exported to a real
// OTLP/HTTP receiver as OTEL_* say (service, resource, headers, compression), flushed on SIGTERM; values
// the gateway cannot use stop start-up with one line naming the variable.
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OtlpReceiver, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { runKeysCli } from '../helpers/run-keys-cli.ts';
import { PROJECT_ROOT, START_ARGS, startGatewayProcess, waitFor, waitUntilReady } from '../../support/start-gateway-process.ts';
import { type PrivateRedis, startRedis } from '../../support/start-redis.ts';
import { type ScriptedUpstream, startScriptedUpstream } from '../../support/start-upstream.ts';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SERVER = 2;
const CLIENT = 3;

let redis: PrivateRedis;
let upstream: ScriptedUpstream;
let env: Record<string, string>;
let key: string;
beforeAll(async () => {
  redis = await startRedis();
  upstream = await startScriptedUpstream((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('[]'));
  env = { REDIS_URL: redis.url, UPSTREAM_URL: upstream.baseUrl, API_KEY_PEPPER: 'tracing-process-pepper-01' };
  const created = await runKeysCli(['create', '--name', 'traced', '--environment', 'staging', '--json'], env);
  key = (JSON.parse(created.stdout) as { key: string }).key;
});
afterAll(async () => {
  await upstream.close();
  await redis.stop();
});

describe('npm start with OTEL_* set', () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(() => receiver.close());

  it("exports a request's spans as the variables say, and sends what is queued on SIGTERM", async () => {
    const gateway = await startGatewayProcess({
      ...env,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-tenant=pets%20team',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip',
      OTEL_SERVICE_NAME: 'petstore-gateway-staging',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,k8s.pod.name=gateway-0',
      // Nothing is sent before shutdown: what arrives is what SIGTERM flushed.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    });
    let exit: number | null;
    try {
      await waitUntilReady(gateway);
      const res = await fetch(`http://127.0.0.1:${gateway.port}/v1/pets`, {
        headers: { authorization: `Bearer ${key}`, traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01` },
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      expect(receiver.spans).toEqual([]);
    } finally {
      exit = await gateway.stop('SIGTERM');
    }
    expect(exit).toBe(0);
    const spans = receiver.spans;
    expect(spans.map((span) => span.name).sort()).toEqual(['GET', 'GET /v1/pets', 'authenticate', 'rate_limit', 'redis', 'redis']);
    // The exact store's command: the request's wait for its count, under its rate_limit span.
    const rateLimit = spans.find((span) => span.name === 'rate_limit')!;
    expect(spans.find((span) => span.attributes['gateway.redis.command'] === 'rate_limit_increment')).toMatchObject({
      name: 'redis',
      kind: CLIENT,
      parentSpanId: rateLimit.spanId,
      attributes: { 'db.system.name': 'redis' },
    });
    expect(new Set(spans.map((span) => span.traceId))).toEqual(new Set([TRACE_ID]));
    expect(spans.find((span) => span.kind === SERVER)).toMatchObject({ name: 'GET /v1/pets', parentSpanId: 'b7ad6b7169203331' });
    expect(spans.find((span) => span.kind === CLIENT && span.name === 'GET')!.attributes['http.response.status_code']).toBe(200);
    expect(spans[0]!.resource).toMatchObject({
      'service.name': 'petstore-gateway-staging',
      'deployment.environment.name': 'staging',
      'k8s.pod.name': 'gateway-0',
    });
    expect(receiver.requestHeaders).toHaveLength(1);
    expect(receiver.requestHeaders[0]).toMatchObject({
      'content-type': 'application/x-protobuf',
      'content-encoding': 'gzip',
      'x-collector-tenant': 'pets team',
    });
    // The start-up line says where spans go.
    expect(gateway.output()).toContain('"msg":"tracing on: spans exported over OTLP"');
  });
});

describe('npm start without an endpoint', () => {
  it('says that trace context is propagated and no spans are exported', async () => {
    const gateway = await startGatewayProcess({ ...env, OTEL_SERVICE_NAME: 'petstore-gateway-staging' });
    try {
      await waitFor(async () => gateway.output().includes('"msg":"tracing: trace context propagated, no spans exported"'));
      const line = gateway
        .output()
        .split('\n')
        .find((entry) => entry.includes('"msg":"tracing: trace context'))!;
      expect(JSON.parse(line).tracing).toEqual({ exporting: false, reason: 'no OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' });
    } finally {
      await gateway.stop();
    }
  });
});

/** npm start with `variables` beside a valid environment, until it exits. */
function startWith(variables: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...START_ARGS],
      { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', ...env, PORT: '0', ADMIN_PORT: '0', ...variables }, timeout: 20_000 },
      (error, _stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stderr }),
    );
  });
}

describe('a value the gateway cannot use stops start-up, naming the variable', () => {
  it.each([
    [
      'an unknown sampler',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_SAMPLER: 'sometimes' },
      'OTEL_TRACES_SAMPLER: "sometimes" is not supported; use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio',
    ],
    [
      'the gRPC protocol (not supported)',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      'OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported; use http/protobuf or http/json',
    ],
    ['an endpoint that is not a URL', { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" is not an http(s) URL'],
    [
      'a ratio above 1',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' },
      'OTEL_TRACES_SAMPLER_ARG: "1.5" is not a ratio between 0 and 1',
    ],
    [
      'a negative queue size',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_BSP_MAX_QUEUE_SIZE: '-1' },
      'OTEL_BSP_MAX_QUEUE_SIZE: "-1" is not a positive integer',
    ],
    ['an exporter other than otlp or none', { OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER: "zipkin" is not supported; use otlp or none'],
  ])('%s', async (_case, variables, message) => {
    const result = await startWith(variables);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`petstore-gateway: could not start: ${message}\n`);
  });
});
