// W3C Trace Context and Baggage as the gateway reads them from a client and states them to the upstream.
import type { IncomingHttpHeaders } from 'node:http';
import { parseTraceParent, TraceState } from '@opentelemetry/core';

/** The trace a request belongs to, as its client said it (a valid `traceparent`), before the gateway's own span. */
export interface RemoteParent {
  traceId: string;
  /** The client's span: the parent of the gateway's. */
  spanId: string;
  sampled: boolean;
  /** The client's `tracestate`, its list members checked (W3C Trace Context §3.3); undefined when none is left. */
  traceState: string | undefined;
}

/**
 * The caller's trace context when its `traceparent` is valid (core's parseTraceParent); undefined otherwise, and its `tracestate`
 * goes with it (§4.2: a vendor that cannot parse `traceparent` starts a new trace and deletes `tracestate`).
 */
export function remoteParent(headers: IncomingHttpHeaders): RemoteParent | undefined {
  const header = headers.traceparent;
  // Repeated traceparent lines arrive joined (an array never): not one trace context, so invalid.
  if (typeof header !== 'string') return undefined;
  const parsed = parseTraceParent(header);
  if (parsed === null) return undefined;
  return { traceId: parsed.traceId, spanId: parsed.spanId, sampled: (parsed.traceFlags & 1) === 1, traceState: checkedTraceState(headers.tracestate) };
}

/** `tracestate` as received, less what a vendor drops (core's TraceState): invalid members, duplicate keys, past 32 or 512 characters. */
function checkedTraceState(header: string | string[] | undefined): string | undefined {
  if (header === undefined || header === '') return undefined;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (isCanonicalTraceState(value)) return value;
  const serialized = new TraceState(value).serialize();
  return serialized === '' ? undefined : serialized;
}

/** §3.3.1.3 key (simple or multi-tenant) and value, as core's validators read them. */
const KEY = '(?:[a-z][_0-9a-z\\-*/]{0,255}|[a-z0-9][_0-9a-z\\-*/]{0,240}@[a-z][_0-9a-z\\-*/]{0,13})';
const VALUE = '[\\x20-\\x2b\\x2d-\\x3c\\x3e-\\x7e]{0,255}[\\x21-\\x2b\\x2d-\\x3c\\x3e-\\x7e]';
const CANONICAL_LIST = new RegExp(`^${KEY}=${VALUE}(?:,${KEY}=${VALUE}){0,31}$`);

/** A list TraceState would serialize unchanged passes as it came: a regular expression costs a tenth of TraceState (decision 0007). */
function isCanonicalTraceState(value: string): boolean {
  if (value.length > 512 || !CANONICAL_LIST.test(value)) return false;
  if (!value.includes(',')) return true;
  const keys = value.split(',').map((member) => member.slice(0, member.indexOf('=')));
  return new Set(keys).size === keys.length;
}

/** The ids the upstream's `traceparent` names, as a request's record holds them from its arrival. */
export interface TraceIds {
  readonly traceId: string;
  /** The span the upstream's request is the child of (the gateway's). */
  readonly upstreamParentId: string;
  readonly sampled: boolean;
  /** The client's `tracestate`, checked, passed on to the upstream; undefined when there is none (or a new trace began). */
  readonly traceState: string | undefined;
}

/** The `traceparent` the upstream receives: version 00, the trace, the gateway's span as its parent, sampled or not. */
export function formatTraceParent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}

/** W3C Baggage §3.3.1: what a platform must propagate at least, and what the gateway propagates at most. */
export const BAGGAGE_MAX_BYTES = 8192;
export const BAGGAGE_MAX_MEMBERS = 64;

/** The client's `baggage`: whole members, in order, while they fit the bounds (never part of a member); undefined when none fits. */
export function boundedBaggage(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? header.join(',') : header;
  if (value.length <= BAGGAGE_MAX_BYTES && Buffer.byteLength(value) <= BAGGAGE_MAX_BYTES && memberCount(value) <= BAGGAGE_MAX_MEMBERS) {
    return value === '' ? undefined : value;
  }
  const kept: string[] = [];
  let bytes = 0;
  for (const member of value.split(',')) {
    const trimmed = member.trim();
    if (trimmed === '') continue;
    const added = Buffer.byteLength(trimmed) + (kept.length > 0 ? 1 : 0);
    if (bytes + added > BAGGAGE_MAX_BYTES || kept.length === BAGGAGE_MAX_MEMBERS) break;
    kept.push(trimmed);
    bytes += added;
  }
  return kept.length === 0 ? undefined : kept.join(',');
}

function memberCount(value: string): number {
  let count = 1;
  for (let index = value.indexOf(','); index !== -1; index = value.indexOf(',', index + 1)) count++;
  return count;
}
