// The versioning policy: deprecated operations announce it on every response and are refused after sunset.
import type { RequestHandler } from 'express';
import type { Contract } from '../contract/compile-contract.ts';
import type { Operation } from '../contract/operations.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import type { Clock } from '../time/clock.ts';

export interface DeprecationPolicyEntry {
  /** When the operation was deprecated: the Deprecation header (RFC 9745). */
  deprecatedAt: Date;
  /** A page about the deprecation: Link rel="deprecation" (RFC 9745) when set. */
  documentationUrl: string | null;
  /** A page about the sunset (what goes away, when, how to migrate): Link rel="sunset" (RFC 8594) when set. */
  sunsetDocumentationUrl: string | null;
}

export interface DeprecationPolicyOptions {
  contract: Contract;
  /** By operationId; every operation the document marks deprecated must have an entry. */
  policies: Readonly<Record<string, DeprecationPolicyEntry>>;
  /** Where the interface is mounted, so links point at the replacement as clients call it. */
  basePath: string;
}

export interface CompiledNotice {
  headers: ReadonlyArray<[string, string | string[]]>;
  sunsetAt?: number;
  removedMessage: string;
  /** `GET /v1/pets/{petId} (getPet)`: how refusals name the operation. */
  subject: string;
  /** `; use GET /v1/pets (listPets) instead`, or empty when the document names no replacement. */
  instead: string;
}

/** Why a deprecated operation was refused: after its sunset, or during a brownout. */
export type DeprecatedRefusalReason = 'sunset' | 'brownout';

function describe(operation: Operation, basePath: string): string {
  return `${operation.method} ${basePath}${operation.pathTemplate} (${operation.id})`;
}

function compileNotice(operation: Operation, entry: DeprecationPolicyEntry, contract: Contract, basePath: string): CompiledNotice {
  const { sunset, replacement: replacementId } = operation.deprecation!;
  const replacement = replacementId === undefined ? undefined : contract.byId.get(replacementId);
  const headers: Array<[string, string | string[]]> = [['Deprecation', `@${Math.floor(entry.deprecatedAt.getTime() / 1000)}`]];
  if (sunset) headers.push(['Sunset', sunset.toUTCString()]);
  // rel="sunset" and "deprecation" point at information, never the replacement: that is the successor version (RFC 5829).
  const links: string[] = [];
  if (replacement) links.push(`<${basePath}${replacement.pathTemplate}>; rel="successor-version"`);
  if (entry.documentationUrl) links.push(`<${entry.documentationUrl}>; rel="deprecation"; type="text/html"`);
  if (entry.sunsetDocumentationUrl) links.push(`<${entry.sunsetDocumentationUrl}>; rel="sunset"; type="text/html"`);
  if (links.length > 0) headers.push(['Link', links.join(', ')]);
  const instead = replacement ? `; use ${describe(replacement, basePath)} instead` : '';
  return {
    headers,
    ...(sunset ? { sunsetAt: sunset.getTime() } : {}),
    removedMessage: `${describe(operation, basePath)} was removed on ${sunset?.toISOString()}${instead}`,
    subject: describe(operation, basePath),
    instead,
  };
}

/** Compiles the notices once; a deprecated operation without a policy entry stops start-up. */
export function compileDeprecationNotices(options: DeprecationPolicyOptions): ReadonlyMap<string, CompiledNotice> {
  const notices = new Map<string, CompiledNotice>();
  for (const operation of options.contract.operations) {
    if (!operation.deprecation) continue;
    const entry = options.policies[operation.id];
    if (!entry) throw new Error(`config: deprecations.${operation.id}.deprecatedAt is required: the document marks ${operation.id} deprecated`);
    notices.set(operation.id, compileNotice(operation, entry, options.contract, options.basePath));
  }
  return notices;
}

/** Adds Deprecation, Sunset and Link headers to every response of a deprecated operation. */
export function createDeprecationNotice(notices: ReadonlyMap<string, CompiledNotice>): RequestHandler {
  return function announceDeprecation(_req, res, next) {
    const notice = notices.get(res.locals.gateway.route?.operation.id ?? '');
    if (notice) for (const [name, value] of notice.headers) res.setHeader(name, value);
    next();
  };
}

/** From the sunset on, a deprecated operation is refused with 410 and the upstream is not called. */
export function createSunsetEnforcement(
  notices: ReadonlyMap<string, CompiledNotice>,
  clock: Clock,
  onRefused?: (operation: string, reason: DeprecatedRefusalReason) => void,
): RequestHandler {
  return function enforceSunset(_req, res, next) {
    const operation = res.locals.gateway.route?.operation.id ?? '';
    const notice = notices.get(operation);
    if (notice?.sunsetAt !== undefined && clock.now() >= notice.sunsetAt) {
      onRefused?.(operation, 'sunset');
      throw new GatewayError('gone', notice.removedMessage, { headers: { 'Cache-Control': 'no-store' } });
    }
    next();
  };
}
