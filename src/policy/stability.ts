// Stability markers: operations marked experimental or beta say so, and each environment decides who may call them.
import type { RequestHandler } from 'express';
import { callerOf } from '../auth/key-store.ts';
import type { Environment, StabilityAccess, StabilityMarker } from '../config/schema.ts';
import { routeOf } from '../contract/operations.ts';
import { GatewayError } from '../errors/gateway-error.ts';

/** The response header naming an operation's marker; stable operations send none. */
export const STABILITY_HEADER = 'API-Stability';

/** Sets `API-Stability` on every response of a marked operation, refusals included (runs before authentication). */
export function createStabilityNotice(): RequestHandler {
  return function announceStability(_req, res, next) {
    const stability = res.locals.gateway.route?.operation.stability;
    if (stability) res.setHeader(STABILITY_HEADER, stability);
    next();
  };
}

export interface StabilityPolicyOptions {
  /** What each marker allows in this environment (config `stability.<environment>`). */
  access: Readonly<Record<StabilityMarker, StabilityAccess>>;
  environment: Environment;
  /** Where the version is mounted, so refusals name the operation as clients call it. */
  basePath: string;
  /** Told of every refusal, for metrics. */
  onRefused?: (operation: string, stability: StabilityMarker) => void;
}

/** Refuses a marked operation with 403 `stability_not_allowed` when the environment denies it, or the key did not opt in. */
export function createStabilityPolicy(options: StabilityPolicyOptions): RequestHandler {
  const { access, environment, basePath, onRefused } = options;
  return function enforceStability(_req, res, next) {
    const { operation } = routeOf(res.locals.gateway);
    const stability = operation.stability;
    if (!stability) return next();
    const allowed = access[stability];
    if (allowed === 'allow' || (allowed === 'opt-in' && callerOf(res.locals.gateway).optedIn?.includes(stability))) return next();
    onRefused?.(operation.id, stability);
    const subject = `${operation.method} ${basePath}${operation.pathTemplate} (${operation.id}) is ${stability}`;
    throw new GatewayError(
      'stability_not_allowed',
      allowed === 'deny'
        ? `${subject} and not served in ${environment}`
        : `${subject}; in ${environment} it is served only to API keys that opted in to ${stability} operations`,
    );
  };
}
