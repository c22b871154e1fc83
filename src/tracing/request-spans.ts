// A traced request's spans as its record holds them: their ids, when each stage ran and what it found,
// written by the stages as they run and described, span by span, once the request completes
// (span-description.ts). No span object is made for a stage (docs/decisions/0014-spans-from-the-request-record.md).

/**
 * Wall-clock time from the monotonic clock: anchored to Date.now() and re-anchored every minute, so that a
 * span's duration is monotonic and its start follows the system clock (as the SDK's spans do).
 */
class SpanClock {
  private offsetMs = 0;
  private anchoredAt = Number.NEGATIVE_INFINITY;

  /** Milliseconds since the epoch, fractional. */
  nowMs(): number {
    const monotonic = performance.now();
    if (monotonic - this.anchoredAt > 60_000) {
      this.offsetMs = Date.now() - monotonic;
      this.anchoredAt = monotonic;
    }
    return monotonic + this.offsetMs;
  }
}

const clock = new SpanClock();

/** Now, in milliseconds since the epoch (fractional), as the spans' times are kept. */
const spanTimeMs = () => clock.nowMs();

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

/** An upstream's origin, parsed once: `originLength` is how much of a URL as the gateway writes it the origin takes. */
export interface UpstreamOrigin {
  hostname: string;
  port: number;
  /** As URL serialises it: scheme, host and a port that is not the default; never a user or password. */
  origin: string;
  originLength: number;
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

/** How the rate-limit stage's decision went, for its span: a decision, or a failure that made none. */
export type RateLimitOutcome = 'allowed' | 'limited' | 'store_unavailable' | 'failed';

/**
 * A sampled request's spans: the SERVER span's ids and arrival, then a slot per stage, empty (start 0)
 * until the stage runs. The stages write their slot as they run (the start and end methods below); once
 * the request has completed (`end`), nothing more is written, and `describeSpans` hands every span to an
 * encoding. A stage still running then (its client gone) ends with the request.
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

  constructor(trace: SpanTrace, arrival: ServerArrival, startMs = spanTimeMs()) {
    this.arrival = arrival;
    this.traceId = trace.traceId;
    this.traceFlags = trace.traceFlags;
    this.traceState = trace.traceState;
    this.serverHigh = randomWord();
    this.serverLow = nonZeroLow(this.serverHigh);
    this.parentHigh = trace.remoteParent?.[0] ?? -1;
    this.parentLow = trace.remoteParent?.[1] ?? -1;
    this.startMs = startMs;
  }

  /** The SERVER span's id, as the access log and the API write it. */
  serverSpanId(): string {
    return spanIdHex(this.serverHigh, this.serverLow);
  }

  startAuthenticate(): void {
    if (this.endMs !== 0) return;
    this.authHigh = randomWord();
    this.authLow = nonZeroLow(this.authHigh);
    this.authStartMs = spanTimeMs();
  }

  /** The key cache answered (`hit`), or the store is asked (`miss`: the `redis` lookup begins). */
  keyCacheAnswered(outcome: 'hit' | 'miss'): void {
    if (this.endMs !== 0) return;
    this.keyCache = outcome;
    if (outcome !== 'miss') return;
    this.lookupHigh = randomWord();
    this.lookupLow = nonZeroLow(this.lookupHigh);
    this.lookupStartMs = spanTimeMs();
  }

  /** The store's lookup answered, or failed with an error of this name. */
  endLookup(errorType?: string): void {
    if (this.lookupStartMs === 0 || this.lookupEndMs !== 0 || this.endMs !== 0) return;
    this.lookupErrorType = errorType;
    this.lookupEndMs = spanTimeMs();
  }

  /** `result`: `ok`, the refusal's reason or `store_unavailable`; none when the stage failed otherwise. */
  endAuthenticate(result: string | undefined): void {
    if (this.authEndMs !== 0 || this.endMs !== 0) return;
    this.authResult = result;
    this.authEndMs = spanTimeMs();
  }

  /** `countsInRedis`: the store sends a command for the count, which the request waits for (its `redis` span). */
  startRateLimit(countsInRedis: boolean): void {
    if (this.endMs !== 0) return;
    this.rateLimitHigh = randomWord();
    this.rateLimitLow = nonZeroLow(this.rateLimitHigh);
    this.rateLimitStartMs = spanTimeMs();
    if (!countsInRedis) return;
    this.countHigh = randomWord();
    this.countLow = nonZeroLow(this.countHigh);
    this.countStartMs = this.rateLimitStartMs;
  }

  /**
   * The limiter decided (or failed: `storeError` names the store's error when it could not count, and
   * `onStoreError` what the policy did then).
   */
  endRateLimit(outcome: RateLimitOutcome, storeError?: { name: string; onStoreError: 'allow' | 'deny' }): void {
    if (this.rateLimitEndMs !== 0 || this.endMs !== 0) return;
    const now = spanTimeMs();
    if (this.countStartMs !== 0) {
      this.countErrorType = storeError?.name;
      this.countEndMs = now;
    }
    this.rateLimitOutcome = outcome;
    this.onStoreError = storeError?.onStoreError;
    this.rateLimitEndMs = now;
  }

  /** The upstream exchange begins: its CLIENT span's id names the upstream's parent (recorded or not). */
  startClient(method: string, origin: UpstreamOrigin, path: string): void {
    this.clientHigh = randomWord();
    this.clientLow = nonZeroLow(this.clientHigh);
    if (this.endMs !== 0) return;
    this.clientMethod = method;
    this.clientOrigin = origin;
    this.clientPath = path;
    this.clientStartMs = spanTimeMs();
  }

  /** The exchange settled: the upstream's status, or why it failed (nothing: the client left before it began). */
  endClient(status: number | undefined, failure: string | undefined): void {
    if (this.clientStartMs === 0 || this.clientEndMs !== 0 || this.endMs !== 0) return;
    this.clientStatus = status;
    this.clientFailure = failure;
    this.clientEndMs = spanTimeMs();
  }

  /** The request completed: the SERVER span ends, and so does any stage still running. */
  end(outcome: RequestOutcome): void {
    if (this.endMs !== 0) return;
    this.outcome = outcome;
    this.endMs = Math.max(this.startMs, spanTimeMs());
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

/** The low word of an id whose high word is `high`: random, and not zero when `high` is (an id is never all zero). */
function nonZeroLow(high: number): number {
  const low = randomWord();
  return high === 0 && low === 0 ? 1 : low;
}
