// Records every request in the metrics when its response is done, whoever answered it.
import type { RequestHandler } from 'express';
import type { GatewayMetrics } from './metrics.ts';

export function createObserve(metrics: GatewayMetrics): RequestHandler {
  return function observe(req, res, next) {
    metrics.requestStarted();
    res.once('close', () => {
      const context = res.locals.gateway;
      const durationSeconds = Number(process.hrtime.bigint() - context.startedAt) / 1e9;
      const operation = context.operation?.id;
      metrics.requestCompleted({
        operation,
        method: req.method,
        // A client that went away before its answer was written is counted as 499, as nginx does.
        statusCode: res.writableFinished ? res.statusCode : 499,
        durationSeconds,
        ...(context.upstreamMs === undefined ? {} : { upstreamSeconds: context.upstreamMs / 1000 }),
      });
      if (operation !== undefined && context.operation?.deprecation && context.consumer) {
        metrics.deprecatedCall(operation, context.consumer.keyId, context.consumer.name);
      }
    });
    next();
  };
}
