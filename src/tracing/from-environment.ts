// The OpenTelemetry SDK as the standard OTEL_* variables configure it: an OTLP/HTTP exporter behind a bounded batch, or nothing.
import { ExportResultCode, parseKeyPairsIntoRecord } from '@opentelemetry/core';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { type ISerializer, JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, type Sampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { ProtobufSpans } from './otlp-protobuf.ts';
import { jsonSpans } from './readable-spans.ts';
import type { RequestSpans } from './request-spans.ts';
import { type BatchOptions, SpanBatch, type SpanEncoding } from './span-batch.ts';
import { propagationOnly, recordingTracing, type Tracing } from './tracer.ts';

export interface TracingFromEnvironment {
  tracing: Tracing;
  /** What start-up logs: where spans go, or why none are exported. */
  summary: { exporting: false; reason: string } | { exporting: true; endpoint: string; protocol: Protocol; sampler: string; serviceName: string };
}

/** An OTEL_* value the gateway cannot use: start-up stops with its message, which names the variable. */
export class TracingSettingError extends Error {
  override name = 'TracingSettingError';
}

type Protocol = 'http/protobuf' | 'http/json';
const PROTOCOLS: readonly Protocol[] = ['http/protobuf', 'http/json'];

/** OTEL_EXPORTER_OTLP_TIMEOUT's default: one export request, retries included, gives up after this. */
const EXPORT_TIMEOUT_MS = 10_000;

/** OTEL_BSP_* defaults of the specification. */
const BATCH_DEFAULTS = { maxQueueSize: 2048, scheduledDelayMillis: 5000, maxExportBatchSize: 512, exportTimeoutMillis: 30000 };

/**
 * Reads the OpenTelemetry variables (their names and meanings are the specification's, see
 * docs/configuration.md): spans are recorded only when an OTLP endpoint is set and neither
 * `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` turns export off; otherwise the gateway only
 * propagates trace context. A value the gateway cannot use stops start-up with a message naming it.
 */
export function tracingFromEnvironment(env: NodeJS.ProcessEnv, service: { name: string; version: string }): TracingFromEnvironment {
  const off = (reason: string): TracingFromEnvironment => ({ tracing: propagationOnly(), summary: { exporting: false, reason } });
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return off('OTEL_SDK_DISABLED is true');
  const exporter = (env.OTEL_TRACES_EXPORTER ?? 'otlp').trim().toLowerCase();
  if (exporter === 'none') return off('OTEL_TRACES_EXPORTER is none');
  if (exporter !== 'otlp') throw new TracingSettingError(`OTEL_TRACES_EXPORTER: "${exporter}" is not supported; use otlp or none`);
  const endpoint = tracesEndpoint(env);
  if (endpoint === undefined) return off('no OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');

  const protocolVariable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL === undefined ? 'OTEL_EXPORTER_OTLP_PROTOCOL' : 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL';
  const protocol = (env[protocolVariable] ?? 'http/protobuf').trim() as Protocol;
  if (!PROTOCOLS.includes(protocol)) throw new TracingSettingError(`${protocolVariable}: "${protocol}" is not supported; use ${PROTOCOLS.join(' or ')}`);
  const batch = {
    maxQueueSize: positiveInteger(env, 'OTEL_BSP_MAX_QUEUE_SIZE', BATCH_DEFAULTS.maxQueueSize),
    scheduledDelayMillis: positiveInteger(env, 'OTEL_BSP_SCHEDULE_DELAY', BATCH_DEFAULTS.scheduledDelayMillis),
    maxExportBatchSize: positiveInteger(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', BATCH_DEFAULTS.maxExportBatchSize),
    exportTimeoutMillis: positiveInteger(env, 'OTEL_BSP_EXPORT_TIMEOUT', BATCH_DEFAULTS.exportTimeoutMillis),
  };
  const { sampler, description } = samplerFrom(env);
  const attributes = parseKeyPairsIntoRecord(env.OTEL_RESOURCE_ATTRIBUTES);
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || attributes[ATTR_SERVICE_NAME] || service.name;
  const resource = resourceFromAttributes({ [ATTR_SERVICE_VERSION]: service.version, ...attributes, [ATTR_SERVICE_NAME]: serviceName });

  const scope = { name: 'petstore-gateway', version: service.version };
  const timeoutVariable = env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT === undefined ? 'OTEL_EXPORTER_OTLP_TIMEOUT' : 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT';
  const transport = { url: endpoint, timeoutMillis: positiveInteger(env, timeoutVariable, EXPORT_TIMEOUT_MS) };
  const batched =
    protocol === 'http/json'
      ? otlpBatch(jsonSpans(resource, scope), JsonTraceSerializer, transport, batch)
      : otlpBatch(new ProtobufSpans(resource, scope), ProtobufTraceSerializer, transport, batch);
  // The global API's provider is left alone: the gateway hands its tracing to what uses it, as it does its
  // logger. A request's spans are built from its record, encoded once it completes
  // (docs/decisions/0020-stages-record-facts.md); the sampler and the OTLP/HTTP transport are the SDK's.
  return {
    tracing: recordingTracing(sampler, batched, {
      // A collector that is down fails the last export (its spans counted as dropped): shutdown goes on.
      shutdown: () => batched.shutdown().catch(() => undefined),
      droppedSpans: () => batched.dropped,
    }),
    summary: { exporting: true, endpoint, protocol, sampler: description, serviceName },
  };
}

/** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT with `v1/traces` appended (the specification's rule). */
function tracesEndpoint(env: NodeJS.ProcessEnv): string | undefined {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (specific) return checkedUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', specific);
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return undefined;
  checkedUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base);
  return `${base.endsWith('/') ? base : `${base}/`}v1/traces`;
}

function checkedUrl(variable: string, value: string): string {
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) throw new TracingSettingError(`${variable}: "${value}" is not an http(s) URL`);
  return value;
}

function positiveInteger(env: NodeJS.ProcessEnv, variable: string, fallback: number): number {
  const raw = env[variable]?.trim();
  if (!raw) return fallback;
  if (!/^[1-9]\d*$/.test(raw)) throw new TracingSettingError(`${variable}: "${raw}" is not a positive integer`);
  return Number(raw);
}

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, the specification's values; parentbased_always_on by default. */
export function samplerFrom(env: NodeJS.ProcessEnv): { sampler: Sampler; description: string } {
  const name = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase();
  const ratio = () => {
    const raw = env.OTEL_TRACES_SAMPLER_ARG?.trim();
    if (!raw) return 1;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0 || value > 1) throw new TracingSettingError(`OTEL_TRACES_SAMPLER_ARG: "${raw}" is not a ratio between 0 and 1`);
    return value;
  };
  switch (name) {
    case 'always_on':
      return { sampler: new AlwaysOnSampler(), description: name };
    case 'always_off':
      return { sampler: new AlwaysOffSampler(), description: name };
    case 'traceidratio':
      return { sampler: new TraceIdRatioBasedSampler(ratio()), description: `${name} ${ratio()}` };
    case 'parentbased_always_on':
      return { sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }), description: name };
    case 'parentbased_always_off':
      return { sampler: new ParentBasedSampler({ root: new AlwaysOffSampler() }), description: name };
    case 'parentbased_traceidratio':
      return { sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) }), description: `${name} ${ratio()}` };
    default:
      throw new TracingSettingError(
        `OTEL_TRACES_SAMPLER: "${name}" is not supported; use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio`,
      );
  }
}

/** A batch's export request, encoded by the batch, as the SDK's delegate takes it. */
interface ExportRequest {
  bytes: Uint8Array;
  spans: number;
}

/**
 * Spans encoded once their request completes, batched, and sent by the SDK's OTLP/HTTP transport: the one
 * the SDK's own exporters use, which reads OTEL_EXPORTER_OTLP_HEADERS, _COMPRESSION, _CERTIFICATE,
 * _CLIENT_KEY and _CLIENT_CERTIFICATE itself, and retries what the specification says to retry. Only the
 * protobuf encoding is the gateway's: the SDK's serializer takes span objects, which that path does not make.
 */
function otlpBatch<Encoded>(
  encoding: SpanEncoding<RequestSpans, Encoded>,
  responses: Pick<ISerializer<unknown, unknown>, 'deserializeResponse'>,
  transport: { url: string; timeoutMillis: number },
  batch: BatchOptions,
): SpanBatch<RequestSpans, Encoded> {
  const serializer: ISerializer<ExportRequest, unknown> = {
    serializeRequest: (request) => request.bytes,
    deserializeResponse: (data) => responses.deserializeResponse(data),
  };
  // convertLegacyHttpOptions is how the SDK's exporters read their environment (deprecated for its 2.0, as
  // they are: this follows them when they move).
  const delegate = createOtlpHttpExportDelegate(
    convertLegacyHttpOptions(transport, 'TRACES', 'v1/traces', { 'Content-Type': encoding.contentType }),
    serializer,
    'otlp_http_span_exporter',
    { name: 'span', countItems: (request: ExportRequest) => request.spans },
    undefined,
  );
  return new SpanBatch(
    encoding,
    {
      send: (bytes, spans, done) => delegate.export({ bytes, spans }, (result) => done(result.code === ExportResultCode.SUCCESS)),
      shutdown: () => delegate.shutdown(),
    },
    batch,
  );
}
