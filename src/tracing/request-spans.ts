// A traced request's spans, built from its record as it completes and described to an encoding (span-description.ts);
// no span object is made for a stage (docs/decisions/0020-stages-record-facts.md).
import type { AuthFacts } from '../auth/authenticate.ts';
import type { RateLimitFacts, RateLimitOutcome } from '../limits/rate-limit.ts';
import type { ExchangeFacts, UpstreamOrigin } from '../proxy/exchange.ts';

/** The wall clock's offset from the monotonic one, re-anchored every minute: durations monotonic, starts on the system clock (as the SDK). */
let offsetMs = 0;
let anchoredAt = Number.NEGATIVE_INFINITY;

/** Milliseconds to add to the monotonic times of a request completing at `monotonic`: one offset for all of them, so its spans keep their order. */
export function wallOffsetMs(monotonic: number): number {
  if (monotonic - anchoredAt > 60_000) {
    offsetMs = Date.now() - monotonic;
    anchoredAt = monotonic;
  }
  return offsetMs;
}

/** A random 32-bit word (as the SDK's RandomIdGenerator draws ids: Math.random). */
function randomWord(): number {
  return (Math.random() * 4294967296) >>> 0;
}

const idBuffer = Buffer.allocUnsafe(8);

/** A span id's hex, from its two words. */
export function spanIdHex(high: number, low: number): string {
  idBuffer.writeUInt32BE(high, 0);
  idBuffer.writeUInt32BE(low, 4);
  return idBuffer.toString('hex');
}

/** A valid (checked) hex span id as its two words. */
export function spanIdWords(hex: string): [number, number] {
  return [Number.parseInt(hex.slice(0, 8), 16), Number.parseInt(hex.slice(8, 16), 16)];
}

/** A trace's id: hex for the API and the access log, bytes for the encoder. */
export interface TraceIdBytes {
  readonly hex: string;
  readonly bytes: Uint8Array;
}

/** A new trace id, never all zero. */
export function newTraceId(): TraceIdBytes {
  const bytes = Buffer.allocUnsafe(16);
  let any = 0;
  for (let at = 0; at < 16; at += 4) {
    const word = randomWord();
    any |= word;
    bytes.writeUInt32BE(word, at);
  }
  if (any === 0) bytes[15] = 1;
  return { hex: bytes.toString('hex'), bytes };
}

/** A valid (checked) hex trace id with its bytes. */
export function traceIdOf(hex: string): TraceIdBytes {
  return { hex, bytes: Buffer.from(hex, 'hex') };
}

/** The Host header's name and port (`server.address`, `server.port`), when it has them. */
export interface HostAttributes {
  host?: string;
  port?: number;
}

/** The trace a request's spans belong to, decided on its arrival. */
export interface SpanTrace {
  traceId: TraceIdBytes;
  /** The client's span, when a valid `traceparent` named one. */
  remoteParent: readonly [number, number] | undefined;
  traceFlags: number;
  /** Serialized; the client's, or the sampler's. */
  traceState: string | undefined;
}

/** What the request's arrival gives its SERVER span's attributes. */
export interface ServerArrival {
  /** As received. */
  method: string;
  scheme: 'http' | 'https';
  path: string;
  host: HostAttributes;
}

/** What the completion hook knows of a finished request, for its SERVER span. */
export interface RequestOutcome {
  statusCode: number;
  /** The operation's route, with the base path (`/v1/pets/{petId}`), once the request matched one. */
  route: string | undefined;
  operationId: string | undefined;
  /** The caller's key id (never the key). */
  keyId: string | undefined;
  /** The Error body's code of a refusal. */
  errorCode: string | undefined;
}

/** What the tracing decided on a sampled request's arrival, held by its trace slice until it completes. */
export interface SpanStart {
  readonly trace: SpanTrace;
  readonly arrival: ServerArrival;
  readonly serverHigh: number;
  readonly serverLow: number;
  /** The CLIENT span's id, named as the upstream's parent from the start. */
  readonly clientHigh: number;
  readonly clientLow: number;
  /** Monotonic milliseconds. */
  readonly startMs: number;
}

/** The stages' facts as the request record holds them. */
export type StageFacts = AuthFacts & RateLimitFacts & ExchangeFacts;

export type { RateLimitOutcome };

/**
 * A sampled request's spans: the SERVER span's ids and arrival, then a slot per stage, empty (start 0) when the stage did not run.
 * Built once as the request completes (a stage still running ends with the request).
 */
export class RequestSpans {
  readonly traceId: TraceIdBytes;
  readonly traceFlags: number;
  readonly traceState: string | undefined;
  readonly serverHigh: number;
  readonly serverLow: number;
  /** The client's span, or -1 for both words when the trace began here. */
  readonly parentHigh: number;
  readonly parentLow: number;
  readonly startMs: number;
  endMs = 0;
  readonly arrival: ServerArrival;
  outcome: RequestOutcome | undefined;

  authHigh = 0;
  authLow = 0;
  authStartMs = 0;
  authEndMs = 0;
  keyCache: 'hit' | 'miss' | undefined;
  authResult: string | undefined;

  lookupHigh = 0;
  lookupLow = 0;
  lookupStartMs = 0;
  lookupEndMs = 0;
  lookupErrorType: string | undefined;

  rateLimitHigh = 0;
  rateLimitLow = 0;
  rateLimitStartMs = 0;
  rateLimitEndMs = 0;
  rateLimitOutcome: RateLimitOutcome | undefined;
  onStoreError: 'allow' | 'deny' | undefined;

  countHigh = 0;
  countLow = 0;
  countStartMs = 0;
  countEndMs = 0;
  countErrorType: string | undefined;

  clientHigh = 0;
  clientLow = 0;
  clientStartMs = 0;
  clientEndMs = 0;
  clientMethod = '';
  clientOrigin: UpstreamOrigin | undefined;
  /** The upstream URL's path after the origin, without its query. */
  clientPath = '';
  clientStatus: number | undefined;
  clientFailure: string | undefined;

  /** `endMs`: the request's completion, monotonic; `offsetMs` turns the monotonic times into the wall clock's. */
  constructor(start: SpanStart, facts: StageFacts, outcome: RequestOutcome, endMs: number, offsetMs: number) {
    const { trace } = start;
    this.arrival = start.arrival;
    this.traceId = trace.traceId;
    this.traceFlags = trace.traceFlags;
    this.traceState = trace.traceState;
    this.serverHigh = start.serverHigh;
    this.serverLow = start.serverLow;
    this.parentHigh = trace.remoteParent?.[0] ?? -1;
    this.parentLow = trace.remoteParent?.[1] ?? -1;
    this.startMs = start.startMs + offsetMs;
    this.endMs = Math.max(this.startMs, endMs + offsetMs);
    this.outcome = outcome;
    const wall = (monotonic: number) => (monotonic === 0 ? 0 : monotonic + offsetMs);
    if (facts.authStartMs !== 0) {
      this.authHigh = randomWord();
      this.authLow = nonZeroLow(this.authHigh);
      this.authStartMs = wall(facts.authStartMs);
      this.authEndMs = wall(facts.authEndMs);
      this.keyCache = facts.keyCache;
      this.authResult = facts.authResult;
      if (facts.lookupStartMs !== 0) {
        this.lookupHigh = randomWord();
        this.lookupLow = nonZeroLow(this.lookupHigh);
        this.lookupStartMs = wall(facts.lookupStartMs);
        this.lookupEndMs = wall(facts.lookupEndMs);
        this.lookupErrorType = facts.lookupError;
      }
    }
    if (facts.rateLimitStartMs !== 0) {
      this.rateLimitHigh = randomWord();
      this.rateLimitLow = nonZeroLow(this.rateLimitHigh);
      this.rateLimitStartMs = wall(facts.rateLimitStartMs);
      this.rateLimitEndMs = wall(facts.rateLimitEndMs);
      this.rateLimitOutcome = facts.rateLimitOutcome;
      this.onStoreError = facts.onStoreError;
      // The wait for the store's command (its `redis` span) is the decision's.
      if (facts.rateLimitWaitedForRedis) {
        this.countHigh = randomWord();
        this.countLow = nonZeroLow(this.countHigh);
        this.countStartMs = this.rateLimitStartMs;
        this.countEndMs = this.rateLimitEndMs;
        this.countErrorType = facts.rateLimitStoreError;
      }
    }
    if (facts.exchangeStartMs !== 0) {
      this.clientHigh = start.clientHigh;
      this.clientLow = start.clientLow;
      this.clientStartMs = wall(facts.exchangeStartMs);
      this.clientEndMs = wall(facts.exchangeEndMs);
      this.clientMethod = facts.exchangeMethod;
      this.clientOrigin = facts.exchangeOrigin;
      const path = facts.exchangePath;
      const query = path.indexOf('?');
      this.clientPath = query === -1 ? path : path.slice(0, query);
      this.clientStatus = facts.upstream?.status;
      this.clientFailure = facts.upstream?.failure;
    }
  }

  /** How many spans `describeSpans` describes: a stage's `redis` span only under its stage's. */
  spanCount(): number {
    let count = 1;
    if (this.authStartMs !== 0) count += this.lookupStartMs === 0 ? 1 : 2;
    if (this.rateLimitStartMs !== 0) count += this.countStartMs === 0 ? 1 : 2;
    if (this.clientStartMs !== 0) count++;
    return count;
  }
}

/** A new span id's two words: random, never both zero. */
export function newSpanIdWords(): [number, number] {
  const high = randomWord();
  return [high, nonZeroLow(high)];
}

/** The low word of an id whose high word is `high`: random, and not zero when `high` is (an id is never all zero). */
function nonZeroLow(high: number): number {
  const low = randomWord();
  return high === 0 && low === 0 ? 1 : low;
}
