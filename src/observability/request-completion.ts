// The one completion hook: when a response is done, whoever answered it, metrics, the request's span and the access log read its record.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { completedStatus, type RequestRecord } from '../pipeline/request-record.ts';
import { refusesTheGateway } from '../proxy/upstream-response.ts';
import type { Tracing } from '../tracing/tracer.ts';
import { createAccessLog } from './logger.ts';
import type { GatewayMetrics } from './metrics.ts';

export type RequestCompletion = (req: IncomingMessage, res: ServerResponse, record: RequestRecord, shed: boolean) => void;

/** Told of every authenticated call of a deprecated operation, answered or refused (the deprecation report counts them). */
export type DeprecatedCallHook = (operation: string, keyId: string, consumer: string) => void;

export function createRequestCompletion(
  metrics: GatewayMetrics,
  logger: Logger,
  environment: string,
  tracing: Tracing,
  onDeprecatedCall?: DeprecatedCallHook,
  /** Told of every request, to count what the rate-limit stage decided of it (usage per consumer). */
  onCounted?: (record: RequestRecord) => void,
): RequestCompletion {
  const logRequest = createAccessLog(logger, environment);
  return function completeRequest(req, res, record, shed) {
    const operation = record.route?.operation;
    const upstreamMs = record.upstream?.ms;
    const statusCode = completedStatus(res, record);
    const method = req.method ?? 'UNKNOWN';
    metrics.requestCompleted({
      operation: operation?.id,
      method,
      statusCode,
      durationSeconds: Number(process.hrtime.bigint() - record.startedAt) / 1e9,
      ...(upstreamMs === undefined ? {} : { upstreamSeconds: upstreamMs / 1000 }),
      // A request whose spans are exported (sampled): its trace is there to be linked to from the latency buckets.
      ...(record.trace.spans !== undefined ? { traceId: record.trace.traceId } : {}),
    });
    const upstream = record.upstream;
    if (operation && upstream) {
      if (upstream.failure) metrics.upstreamFailed(operation.id, upstream.failure);
      if (upstream.headersDropped) metrics.upstreamHeadersDropped(operation.id, upstream.headersDropped);
      // The backend refused the gateway itself (its identity token, or the backend's setup): an operator's problem.
      if (upstream.status !== undefined && refusesTheGateway(upstream.status)) metrics.upstreamRefusedIdentity(operation.id, upstream.status);
      if (upstream.contract !== undefined && upstream.status !== undefined) metrics.upstreamContractChecked(operation.id, upstream.status, upstream.contract);
    }
    if (operation?.deprecation && record.caller) {
      metrics.deprecatedCall(operation.id, record.caller.keyId, record.caller.name);
      onDeprecatedCall?.(operation.id, record.caller.keyId, record.caller.name);
    }
    if (record.rateLimitOutcome !== undefined) onCounted?.(record);
    if (record.trace.spans !== undefined) {
      tracing.end(record, {
        statusCode,
        route: operation?.route,
        operationId: operation?.id,
        keyId: record.caller?.keyId,
        errorCode: record.error?.code,
      });
    }
    // Shed requests are counted, not logged one by one: at capacity, a log line each would add to the load.
    if (!shed) logRequest(req, res, record);
  };
}
