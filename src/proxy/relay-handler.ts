// One exchange's undici handler: relays the upstream's answer as it arrives, and times the upstream's silences.
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { ExchangeObserver, ExchangeOutcome, UpstreamOptions } from './exchange.ts';
import { classifyUpstreamFailure, describeUpstreamFailure, UpstreamFailure } from './upstream-failure.ts';
import {
  answerUpstreamError,
  hasUndecodedTransferCoding,
  MAX_ERROR_BODY_BYTES,
  relayHead,
  type RelayPolicy,
  type UpstreamHeaders,
} from './upstream-response.ts';

/** The reason an exchange is aborted with when the client leaves: never reported as an upstream failure. */
const CLIENT_GONE = new Error('the client closed its connection');
/** The reason an exchange whose answer is complete is aborted with, to close a connection that is not to be reused. */
const CONNECTION_RETIRED = new Error('the upstream connection is not reused after a bodiless answer');

/** One exchange: success answers stream to the client as they come; error answers are read first (see answerUpstreamError). */
export class RelayHandler implements Dispatcher.DispatchHandler {
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
    this.totalTimer = setTimeout(() => this.fail(new UpstreamFailure('total_timeout', `no complete answer within ${totalTimeoutMs} ms`)), totalTimeoutMs);
    res.once('close', this.onClientClose);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Settled while waiting for a connection: thrown, not aborted, so undici drops the request and keeps the
    // healthy pooled connection that an abort would destroy.
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
    if (hasUndecodedTransferCoding(headers)) {
      // Before anything is set on the response: the client gets a 502 Error on a connection it keeps,
      // and the abort (in fail) closes the upstream connection, whose framing is lost, instead of reusing it.
      this.fail(new UpstreamFailure('protocol', 'the answer is framed by a transfer coding other than chunked alone'));
      return;
    }
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
   * A 204 or 304 has no body, so nothing frames bytes a backend might wrongly write after it: they would be read as the answer to
   * the next request on the connection. Aborting at its head makes undici close the connection instead of reusing it.
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
      if (res.destroyed) {
        this.clientClosed();
        return;
      }
      this.answered = true;
      this.succeed({ status });
      // Written before the record is given its slice (in succeed), so the count is on it.
      this.headersDropped = answerUpstreamError(
        status,
        this.headers,
        this.errorBodySize > MAX_ERROR_BODY_BYTES ? undefined : Buffer.concat(this.errorBody),
        res,
        this.relay,
      );
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
