// The upstream exchange as one function: send the request, relay the answer, resolve with what happened.
// Built on undici's dispatcher: its handler callbacks are the exchange's events, with no stream or
// ClientRequest between the upstream's socket and the client's response (docs/decisions/ and
// docs/performance.md, "The request path", give what that saves).
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
// undici's index loads all of undici (fetch, WebSocket, caches, mocks: twice the heap and code of its Pool
// alone); the exchange needs the Pool only. Typed in undici-pool.d.ts. The path is undici's own layout, not
// a public entry point, so package.json pins undici's exact version: an upgrade is a change the tests run.
import Pool from 'undici/lib/dispatcher/pool.js';
import { classifyUpstreamFailure, describeUpstreamFailure, UpstreamFailure, type UpstreamFailureKind } from './upstream-failure.ts';
import { answerUpstreamError, MAX_ERROR_BODY_BYTES, relayHead, type RelayPolicy, type UpstreamHeaders } from './upstream-response.ts';

export interface UpstreamOptions {
  /** The upstream base address, ending in /v1. */
  baseUrl: string;
  /** Nothing from the upstream for this long: 504 (headers_timeout until its head arrived, idle_timeout within its body). */
  idleTimeoutMs: number;
  /** A new upstream connection must be established within this. */
  connectTimeoutMs: number;
  /** The whole exchange, to the last byte of the response, must finish within this. */
  totalTimeoutMs: number;
  /** Connections to the upstream at most; further requests wait for one. */
  maxSockets: number;
}

export interface UpstreamRequest {
  method: string;
  /** Path and query below the base address, e.g. `/pets?limit=2`. */
  path: string;
  headers: OutgoingHttpHeaders;
  /** Sent with the Content-Length the headers declare. */
  body: Buffer | undefined;
  /** Which of the upstream's headers the client may see, and the secret never to echo. */
  relay: RelayPolicy;
}

/** The proxy stage's slice of the request record, written as the exchange settles. */
export interface UpstreamSlice {
  /** The upstream's status, once its answer began. */
  status?: number;
  /** Milliseconds from sending the request to the end of the relayed answer. */
  ms?: number;
  /** Why the exchange failed or was cut short, when it was. */
  failure?: UpstreamFailureKind;
  /** What went wrong, for the access log: the gateway's words and the socket error's code, never the upstream's bytes. */
  failureDetail?: { message: string; code?: string };
  /** Header fields of the upstream's answer the relay policy dropped, when any were. */
  headersDropped?: number;
}

/** How an exchange ended once the upstream's answer began to be relayed. */
export interface ExchangeOutcome {
  /** The upstream's status. */
  status: number;
  /** Milliseconds from sending the request to the end of the relayed response. */
  upstreamMs: number;
  /** Set when the answer was cut short after its head was relayed (the client sees a truncated response). */
  failure?: UpstreamFailureKind;
  /** The client went away before the answer was complete. */
  clientClosed?: boolean;
}

/**
 * Resolves once the answer is relayed, or rejects with an UpstreamFailure when nothing was relayed
 * yet (so the caller answers with an Error). The response is written here and nowhere else.
 */
export type Exchange = (request: UpstreamRequest, res: ServerResponse, onSettled?: ExchangeObserver) => Promise<ExchangeOutcome>;

/**
 * Given the exchange's slice of the request record, synchronously, before the promise settles: the
 * response's `close` (which feeds metrics and the access log) can fire before a continuation of the promise runs.
 */
export type ExchangeObserver = (slice: UpstreamSlice) => void;

export interface Upstream {
  exchange: Exchange;
  /** host[:port], as the Host header the upstream expects. */
  host: string;
  /** Closes pooled connections (on shutdown). */
  close(): Promise<void>;
}

/** The reason an exchange is aborted with when the client leaves: never reported as an upstream failure. */
const CLIENT_GONE = new Error('the client closed its connection');
/** The reason an exchange whose answer is complete is aborted with, to close a connection that is not to be reused. */
const CONNECTION_RETIRED = new Error('the upstream connection is not reused after a bodiless answer');

/**
 * One exchange: undici calls these methods as the upstream's answer arrives. Success answers stream to
 * the client as they come; error answers are read first (see answerUpstreamError).
 */
class RelayHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private status = 0;
  private headers: UpstreamHeaders = {};
  /** The upstream's answer is the client's: its head is set on the response (sent with the first body bytes). */
  private answered = false;
  /** The upstream's header names set on the response, removed again if the exchange fails before they are sent. */
  private readonly relayedNames: string[] = [];
  /** Header fields of the answer the relay policy dropped. */
  private headersDropped = 0;
  private settled = false;
  private errorBody: Buffer[] | undefined;
  private errorBodySize = 0;
  private readonly startedAt = performance.now();
  private readonly totalTimer: NodeJS.Timeout;
  /** Silence from the upstream: armed as the request is sent, re-armed by every part of the answer. */
  private idleTimer: NodeJS.Timeout | undefined;
  /** Parts of the answer received (its heads, its body's chunks): told apart from a silence. */
  private progress = 0;
  /** The client is slow and the upstream paused for it: its silence is then not the upstream's. */
  private paused = false;
  private readonly idleTimeoutMs: number;
  private readonly onClientClose = () => this.clientClosed();
  private readonly onDrain = () => {
    if (this.settled) return;
    this.paused = false;
    this.idleTimer?.refresh();
    this.controller?.resume();
  };

  private readonly res: ServerResponse;
  private readonly resolve: (outcome: ExchangeOutcome) => void;
  private readonly reject: (failure: UpstreamFailure) => void;
  private readonly onSettled: ExchangeObserver | undefined;
  private readonly relay: RelayPolicy;

  constructor(
    res: ServerResponse,
    { idleTimeoutMs, totalTimeoutMs }: Pick<UpstreamOptions, 'idleTimeoutMs' | 'totalTimeoutMs'>,
    resolve: (outcome: ExchangeOutcome) => void,
    reject: (failure: UpstreamFailure) => void,
    onSettled: ExchangeObserver | undefined,
    relay: RelayPolicy,
  ) {
    this.res = res;
    this.relay = relay;
    this.resolve = resolve;
    this.reject = reject;
    this.onSettled = onSettled;
    this.idleTimeoutMs = idleTimeoutMs;
    this.totalTimer = setTimeout(
      () => this.fail(new UpstreamFailure('total_timeout', `no complete answer within ${totalTimeoutMs} ms`)),
      totalTimeoutMs,
    );
    res.once('close', this.onClientClose);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // The client left (or the total time ran out) while the request waited for a connection: it is not
    // sent. Thrown, not aborted: undici then drops the request and keeps the connection, where an
    // abort here would destroy a healthy pooled connection for a request that never used it.
    if (this.settled) throw CLIENT_GONE;
    this.controller = controller;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.silent(), this.idleTimeoutMs);
  }

  /** Nothing from the upstream for idleTimeoutMs: before its final head arrived (headers), or within its body. */
  private silent(): void {
    if (this.paused) return; // re-armed when the client drains
    // Timers run before the event loop reads its sockets: after a stall of the process itself, what the
    // upstream sent meanwhile is read first (setImmediate runs after that), and re-arms the timer.
    const progress = this.progress;
    setImmediate(() => {
      if (this.settled || this.paused || this.progress !== progress) return;
      const kind = this.status === 0 ? 'headers_timeout' : 'idle_timeout';
      this.fail(new UpstreamFailure(kind, `nothing from the upstream for ${this.idleTimeoutMs} ms`));
    });
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: UpstreamHeaders): void {
    if (this.settled) return;
    this.progress++;
    this.idleTimer?.refresh();
    // 1xx answers are interim (RFC 9110 §15.2): the final one follows.
    if (statusCode < 200) return;
    this.status = statusCode;
    this.headers = headers;
    if (statusCode >= 400) {
      this.errorBody = [];
      return;
    }
    this.headersDropped = relayHead(statusCode, headers, this.res, this.relay, this.relayedNames);
    this.answered = true;
    if (statusCode === 204 || statusCode === 304) this.retireConnection();
  }

  /**
   * A 204 or 304 has no body by definition, so nothing frames what a backend might wrongly write after
   * it: bytes that would be read as the answer to the next request on the connection, whoever sent it.
   * The answer is complete at its head; aborting now makes undici close the connection instead of
   * reusing it (a new connection per 204/304, which the interface's operations rarely answer).
   */
  private retireConnection(): void {
    this.succeed({ status: this.status });
    this.res.end();
    this.controller?.abort(CONNECTION_RETIRED);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.progress++;
    this.idleTimer?.refresh();
    if (this.errorBody !== undefined) {
      this.errorBodySize += chunk.length;
      if (this.errorBodySize <= MAX_ERROR_BODY_BYTES) this.errorBody.push(chunk);
      return;
    }
    // A client that reads slowly slows the upstream down, rather than the gateway buffering for it.
    // undici may hand over a chunk while paused (the upstream closed): one drain listener is enough.
    if (!this.res.write(chunk) && !this.paused) {
      this.paused = true;
      controller.pause();
      this.res.once('drain', this.onDrain);
    }
  }

  onResponseEnd(): void {
    if (this.settled) return;
    const { res, status } = this;
    if (this.errorBody !== undefined) {
      if (res.destroyed) return this.clientClosed();
      this.answered = true;
      this.succeed({ status });
      // Written before the record is given its slice (in succeed), so the count is on it.
      this.headersDropped = answerUpstreamError(status, this.headers, this.errorBodySize > MAX_ERROR_BODY_BYTES ? undefined : Buffer.concat(this.errorBody), res, this.relay);
      return;
    }
    this.succeed({ status });
    res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (error === CLIENT_GONE || error === CONNECTION_RETIRED) return;
    this.fail(error instanceof UpstreamFailure ? error : new UpstreamFailure(classifyUpstreamFailure(error), error.message, { cause: error }));
  }

  /** Ends the exchange as failed: an Error answer if nothing was relayed, a cut response otherwise. */
  private fail(failure: UpstreamFailure): void {
    if (this.settled) return;
    if (this.answered && !this.res.headersSent) {
      // The upstream's head was set but never sent (no body byte followed it): the client gets an Error.
      for (const name of this.relayedNames) this.res.removeHeader(name);
      this.answered = false;
    }
    if (this.answered) {
      // A client that stopped reading stalls the relay, and so the upstream: the client's doing, not the upstream's.
      const clientStalled = this.res.writableNeedDrain;
      this.succeed(clientStalled ? { status: this.status, clientClosed: true } : { status: this.status, failure: failure.kind }, failure);
      this.res.destroy();
    } else {
      this.finish();
      this.onSettled?.({ failure: failure.kind, failureDetail: detailOf(failure) });
      this.reject(failure);
    }
    // Settled first: the error undici reports for this abort finds nothing left to do.
    this.controller?.abort(failure);
  }

  private clientClosed(): void {
    if (this.settled || this.res.writableFinished) return;
    this.succeed({ status: this.status, clientClosed: true });
    this.controller?.abort(CLIENT_GONE);
  }

  /** `cutShort` is the failure that cut a relayed answer short, when one did. */
  private succeed(outcome: Omit<ExchangeOutcome, 'upstreamMs'>, cutShort?: UpstreamFailure): void {
    if (!this.finish()) return;
    const complete = { ...outcome, upstreamMs: performance.now() - this.startedAt };
    this.onSettled?.({
      status: complete.status,
      ms: complete.upstreamMs,
      ...(complete.failure && cutShort ? { failure: complete.failure, failureDetail: detailOf(cutShort) } : {}),
      ...(this.headersDropped > 0 ? { headersDropped: this.headersDropped } : {}),
    });
    this.resolve(complete);
  }

  private finish(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.totalTimer);
    clearTimeout(this.idleTimer);
    this.res.off('close', this.onClientClose);
    this.res.off('drain', this.onDrain);
    return true;
  }
}

function detailOf(failure: UpstreamFailure): { message: string; code?: string } {
  const { message, code } = describeUpstreamFailure(failure);
  return code === undefined ? { message } : { message, code };
}

export function createUpstream(options: UpstreamOptions): Upstream {
  const target = new URL(options.baseUrl);
  const pool = new Pool(target.origin, {
    connections: options.maxSockets,
    connectTimeout: options.connectTimeoutMs,
    // The upstream's silences are timed by the exchange (RelayHandler's idle timer), not by undici: undici
    // times them with its "fast timers", objects that live until its sweep every half second, so every
    // request's timer outlived two young-generation GCs and was promoted into the old generation (how
    // much: docs/performance.md, "The request path"). A native timer, cleared as the exchange ends, dies young.
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const basePath = target.pathname.replace(/\/$/, '');

  function exchange(request: UpstreamRequest, res: ServerResponse, onSettled?: ExchangeObserver): Promise<ExchangeOutcome> {
    // The client left while an earlier stage was waiting (Redis, the breaker): nothing to send, nothing to count.
    if (res.destroyed) return Promise.resolve({ status: 0, upstreamMs: 0, clientClosed: true });
    return new Promise((resolve, reject) => {
      const handler = new RelayHandler(res, options, resolve, reject, onSettled, request.relay);
      pool.dispatch(
        {
          method: request.method,
          path: basePath + request.path,
          // undici's header type is its own; node:http's OutgoingHttpHeaders values are strings here (upstreamHeaders).
          headers: request.headers as Record<string, string | string[]>,
          body: request.body ?? null,
          // No `reset: false`: undici closes the connection after a HEAD. A backend that wrongly writes a
          // body after its HEAD answer would otherwise leave those bytes to be read as the answer to the
          // next request on the connection, whoever sent it.
        },
        handler,
      );
    });
  }

  return {
    exchange,
    host: target.host,
    close: () => pool.destroy(),
  };
}
