// What span export costs the operator to know: the spans recorded and never delivered.
import { Counter, type Registry } from 'prom-client';
import type { Tracing } from '../tracing/tracer.ts';
import { METRIC_PREFIX } from './metrics.ts';

/**
 * `petstore_gateway_trace_spans_dropped_total`, read at scrape time from the tracing's own count: the
 * batch queue was full (the collector slower than the traffic), or an export failed (the collector
 * down, slow past its timeout, or refusing). Zero, always, when no exporter is configured.
 */
export function registerTraceExportMetrics(registry: Registry, tracing: Tracing, environment: string): void {
  let counted = 0;
  new Counter({
    name: `${METRIC_PREFIX}trace_spans_dropped_total`,
    help: 'Spans the gateway recorded and never delivered to the OTLP collector (batch queue full, or export failed).',
    labelNames: ['environment'] as const,
    registers: [registry],
    collect() {
      const dropped = tracing.droppedSpans();
      this.inc({ environment }, dropped - counted);
      counted = dropped;
    },
  });
}
