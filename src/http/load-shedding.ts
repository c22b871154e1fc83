// Above a bound on requests in flight, answer 503 at once rather than queue without bound.
import type { RequestHandler } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';

export interface LoadSheddingOptions {
  maxInFlight: number;
  /** Told of every shed request, for metrics. */
  onShed?: () => void;
}

/** Runs first on the public listener: a shed request costs no Redis lookup and no upstream socket. */
export function createLoadShedding(options: LoadSheddingOptions): RequestHandler {
  let inFlight = 0;
  return function shedLoad(_req, res, next) {
    if (inFlight >= options.maxInFlight) {
      options.onShed?.();
      throw new GatewayError('service_unavailable', 'The gateway is at capacity; retry shortly', { headers: { 'Retry-After': '1' } });
    }
    inFlight++;
    res.once('close', () => {
      inFlight--;
    });
    next();
  };
}
