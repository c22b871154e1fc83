// A whole version deprecated: every operation of it announces it, and from the version's sunset on every one is refused.
import type { RequestHandler } from 'express';
import type { VersionDeprecation } from '../config/schema.ts';
import type { Contract } from '../contract/compile-contract.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import type { Clock } from '../time/clock.ts';
import type { DeprecatedRefusalReason } from './deprecation.ts';

export interface VersionNotice {
  /** `@<seconds>`: the Deprecation header (RFC 9745). */
  deprecation: string;
  sunsetAt?: number;
  /** `</v2>; rel="successor-version"` when a successor is configured. */
  link?: string;
  /** ` on 2031-01-01T00:00:00.000Z from /v2; use version /v3 instead`: how refusals end. */
  removal: string;
  basePath: string;
}

/** Compiled once per version; undefined for a version that is current. */
export function compileVersionNotice(contract: Contract, deprecation: VersionDeprecation | null): VersionNotice | undefined {
  if (!deprecation) return undefined;
  const { deprecatedAt, sunset, successor } = deprecation;
  const instead = successor === null ? '' : `; use version ${successor} instead`;
  return {
    deprecation: `@${Math.floor(deprecatedAt.getTime() / 1000)}`,
    ...(sunset === null ? {} : { sunsetAt: sunset.getTime() }),
    ...(successor === null ? {} : { link: `<${successor}>; rel="successor-version"` }),
    removal: ` on ${sunset?.toISOString()} with version ${contract.basePath}${instead}`,
    basePath: contract.basePath,
  };
}

/**
 * Adds Deprecation, Sunset and Link under the version's base path, after an operation's own notice (deprecation.ts):
 * that keeps its Deprecation date, gets the earlier sunset, and both successors in Link.
 */
export function createVersionNotice(notice: VersionNotice): RequestHandler {
  const sunset = notice.sunsetAt === undefined ? undefined : new Date(notice.sunsetAt).toUTCString();
  return function announceVersionDeprecation(_req, res, next) {
    const own = res.locals.gateway.route?.operation.deprecation;
    if (!own) res.setHeader('Deprecation', notice.deprecation);
    if (sunset !== undefined && (own?.sunset === undefined || notice.sunsetAt! < own.sunset.getTime())) res.setHeader('Sunset', sunset);
    if (notice.link !== undefined) {
      const link = res.getHeader('Link');
      res.setHeader('Link', link === undefined ? notice.link : `${String(link)}, ${notice.link}`);
    }
    next();
  };
}

/** From the version's sunset on, every operation of it is refused with 410 `gone`, naming the successor; the upstream is not called. */
export function createVersionSunsetEnforcement(
  notice: VersionNotice,
  clock: Clock,
  onRefused?: (operation: string, reason: DeprecatedRefusalReason) => void,
): RequestHandler {
  const { sunsetAt } = notice;
  return function enforceVersionSunset(_req, res, next) {
    if (sunsetAt === undefined || clock.now() < sunsetAt) return next();
    const { operation } = res.locals.gateway.route!;
    onRefused?.(operation.id, 'sunset');
    throw new GatewayError('gone', `${operation.method} ${notice.basePath}${operation.pathTemplate} (${operation.id}) was removed${notice.removal}`, {
      headers: { 'Cache-Control': 'no-store' },
    });
  };
}
