// During a brownout a deprecated operation is refused as after its sunset, so its callers notice while they can still move.
import type { RequestHandler } from 'express';
import { GatewayError } from '../errors/gateway-error.ts';
import type { Clock } from '../time/clock.ts';
import type { BrownoutBoard } from './brownouts.ts';
import type { CompiledNotice, DeprecatedRefusalReason } from './deprecation.ts';

export interface BrownoutEnforcementOptions {
  /** The deprecation notices (src/policy/deprecation.ts): how refusals name the operation, its sunset and replacement. */
  notices: ReadonlyMap<string, CompiledNotice>;
  /** The process's brownouts, scheduled and set by operators; read in memory. */
  brownouts: BrownoutBoard;
  clock: Clock;
  onRefused?: (operation: string, reason: DeprecatedRefusalReason) => void;
}

/** Refuses a browned-out operation with 410 `brownout` and `Retry-After` at the window's end; the upstream is not called. */
export function createBrownoutEnforcement(options: BrownoutEnforcementOptions): RequestHandler {
  const { notices, brownouts, clock, onRefused } = options;
  return function enforceBrownout(_req, res, next) {
    const operation = res.locals.gateway.route?.operation.id ?? '';
    const notice = notices.get(operation);
    if (!notice) return next();
    const now = clock.now();
    const brownout = brownouts.active(operation, now);
    if (!brownout) return next();
    onRefused?.(operation, 'brownout');
    const removal = notice.sunsetAt === undefined ? 'will be removed (no date is set yet)' : `will be removed on ${new Date(notice.sunsetAt).toISOString()}`;
    throw new GatewayError(
      'brownout',
      `${notice.subject} is browned out until ${new Date(brownout.end).toISOString()}: it is deprecated and ${removal}${notice.instead}`,
      {
        headers: { 'Cache-Control': 'no-store', 'Retry-After': String(Math.ceil((brownout.end - now) / 1000)) },
      },
    );
  };
}
