// The OpenTelemetry SDK as the standard OTEL_* variables configure it: an OTLP/HTTP exporter behind a bounded batch, or nothing.
import { type Context, TraceFlags } from '@opentelemetry/api';
import { ExportResultCode, parseKeyPairsIntoRecord } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type Sampler,
  type Span,
  type SpanExporter,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { LeanTracer } from './lean-tracer.ts';
import { propagationOnly, recordingTracing, type Tracing } from './tracer.ts';

export interface TracingFromEnvironment {
  tracing: Tracing;
  /** What start-up logs: where spans go, or why none are exported. */
  summary: { exporting: false; reason: string } | { exporting: true; endpoint: string; protocol: Protocol; sampler: string; serviceName: string };
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
  if (exporter !== 'otlp') throw new Error(`OTEL_TRACES_EXPORTER: "${exporter}" is not supported; use otlp or none`);
  const endpoint = tracesEndpoint(env);
  if (endpoint === undefined) return off('no OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');

  const protocolVariable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL === undefined ? 'OTEL_EXPORTER_OTLP_PROTOCOL' : 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL';
  const protocol = (env[protocolVariable] ?? 'http/protobuf').trim() as Protocol;
  if (!PROTOCOLS.includes(protocol)) throw new Error(`${protocolVariable}: "${protocol}" is not supported; use ${PROTOCOLS.join(' or ')}`);
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

  // The exporters read their headers, compression and certificates from OTEL_EXPORTER_OTLP_* themselves.
  const timeoutVariable = env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT === undefined ? 'OTEL_EXPORTER_OTLP_TIMEOUT' : 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT';
  const exporterOptions = { url: endpoint, timeoutMillis: positiveInteger(env, timeoutVariable, EXPORT_TIMEOUT_MS) };
  const otlp = protocol === 'http/json' ? new JsonExporter(exporterOptions) : new ProtobufExporter(exporterOptions);
  const bounded = new BoundedExport(otlp, batch);
  // The global API's provider is left alone: the gateway hands its tracer to what uses it, as it does its logger.
  // Its spans are the gateway's own small objects, not the SDK's (docs/decisions/0008-lean-spans.md); the
  // sampler, the batch processor and the OTLP exporter are the SDK's.
  const tracer = new LeanTracer(resource, { name: 'petstore-gateway', version: service.version }, sampler, bounded);
  return {
    tracing: recordingTracing(tracer, {
      // A collector that is down fails the last export (its spans counted as dropped): shutdown goes on.
      shutdown: () => bounded.shutdown().catch(() => undefined),
      droppedSpans: () => bounded.dropped,
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
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) throw new Error(`${variable}: "${value}" is not an http(s) URL`);
  return value;
}

function positiveInteger(env: NodeJS.ProcessEnv, variable: string, fallback: number): number {
  const raw = env[variable]?.trim();
  if (!raw) return fallback;
  if (!/^[1-9]\d*$/.test(raw)) throw new Error(`${variable}: "${raw}" is not a positive integer`);
  return Number(raw);
}

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, the specification's values; parentbased_always_on by default. */
function samplerFrom(env: NodeJS.ProcessEnv): { sampler: Sampler; description: string } {
  const name = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase();
  const ratio = () => {
    const raw = env.OTEL_TRACES_SAMPLER_ARG?.trim();
    if (!raw) return 1;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0 || value > 1) throw new Error(`OTEL_TRACES_SAMPLER_ARG: "${raw}" is not a ratio between 0 and 1`);
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
      throw new Error(
        `OTEL_TRACES_SAMPLER: "${name}" is not supported; use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio`,
      );
  }
}

/**
 * The batch processor with its losses counted, as its exporter and in front of it. The batch processor
 * drops spans past its queue with no more than a debug log, and a failed export (the collector down,
 * slower than the timeout, or refusing) loses its batch: `dropped` counts both, for the operator. The
 * queue is bounded here, with the batch processor's own rule (sampled spans ended and not yet handed to
 * the exporter), so that what is dropped is what is counted.
 */
class BoundedExport implements SpanProcessor {
  dropped = 0;
  private queued = 0;
  private readonly processor: SpanProcessor;
  private readonly maxQueueSize: number;

  constructor(otlp: SpanExporter, batch: typeof BATCH_DEFAULTS) {
    this.maxQueueSize = batch.maxQueueSize;
    const exporter: SpanExporter = {
      export: (spans, done) => {
        this.queued = Math.max(0, this.queued - spans.length);
        otlp.export(spans, (result) => {
          if (result.code !== ExportResultCode.SUCCESS) this.dropped += spans.length;
          done(result);
        });
      },
      shutdown: () => otlp.shutdown(),
      forceFlush: () => otlp.forceFlush?.() ?? Promise.resolve(),
    };
    this.processor = new BatchSpanProcessor({ exporter, ...batch });
  }

  onStart(span: Span, parentContext: Context): void {
    this.processor.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.queued >= this.maxQueueSize) {
      this.dropped++;
      return;
    }
    this.queued++;
    this.processor.onEnd(span);
  }

  /** Exports what is queued (within the export timeout), then shuts the exporter down. */
  shutdown(): Promise<void> {
    return this.processor.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.processor.forceFlush();
  }
}
