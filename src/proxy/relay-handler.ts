// One exchange's undici handler: relays the upstream's answer as it arrives, and times the upstream's silences.
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { type BodyRule, checkAnswerHead } from '../contract/check-answer.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { sendRefusal } from '../errors/send-error.ts';
import { type AnswerCheck, type AnswerVerdict, checkBody, refusedUnderEnforce, TOO_LARGE, VALID, violation } from './answer-check.ts';
import { type AnswerBinding, boundToRequest } from './answer-binding.ts';
import type { ExchangeFacts, ExchangeObserver, ExchangeOutcome, UpstreamOptions, UpstreamRequest } from './exchange-types.ts';
import { classifyUpstreamFailure, describeUpstreamFailure, UpstreamFailure } from './upstream-failure.ts';
import {
  answerUpstreamError,
  hasUndecodedTransferCoding,
  MAX_ERROR_BODY_BYTES,
  refusesTheGateway,
  relayHead,
  type RelayPolicy,
  type UpstreamHeaders,
} from './upstream-response.ts';

/** The reason an exchange is aborted with when the client leaves: never reported as an upstream failure. */
const CLIENT_GONE = new Error('the client closed its connection');
/** The reason an exchange whose answer is complete is aborted with, to close a connection that is not to be reused. */
const CONNECTION_RETIRED = new Error('the upstream connection is not reused after a bodiless answer');
/** The reason an exchange is aborted with when its head already breaks the document and the client was answered 502. */
const ANSWER_REFUSED = new Error('the answer broke the interface document and was not relayed');

/** The client's answer when the backend's breaks the document under `enforce`. */
function contractViolationError(): GatewayError {
  return new GatewayError('upstream_contract_violation', 'The pet store backend answered outside the interface; the answer was not relayed');
}

/** The exchange's timers, and what its upstream can say about a failure undici reported in its own words (TlsAlerts). */
export type RelayOptions = Pick<UpstreamOptions, 'idleTimeoutMs' | 'totalTimeoutMs'> & {
  explainFailure?: (error: Error) => Error;
  /** Whether an answer is the request's, by its X-Request-Id; undefined: not looked at (`upstream.requestIdEcho: off`). */
  answerBinding?: AnswerBinding | undefined;
};

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
  /** How this answer is checked against the document; undefined: relayed unchecked (off, or not sampled). */
  private readonly check: AnswerCheck | undefined;
  /** What the check found, once it is done. */
  private verdict: AnswerVerdict | undefined;
  /** What the body is checked by, when it is: its bytes are gathered (bodyCopy, or errorBody for an error status). */
  private bodyRule: BodyRule | undefined;
  /** The success body's bytes so far: a copy beside the relay (report), or the answer held back (enforce). */
  private bodyCopy: Buffer[] | undefined;
  private bodyCopySize = 0;
  /** Enforce: the answer waits in bodyCopy until it is checked; its head is not yet on the response. */
  private holding = false;
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
  private readonly explainFailure: ((error: Error) => Error) | undefined;
  private readonly answerBinding: AnswerBinding | undefined;
  /** The X-Request-Id sent with the request, which its answer echoes. */
  private readonly sentId: string;
  private readonly record: Pick<ExchangeFacts, 'error'> | undefined;

  constructor(
    res: ServerResponse,
    { idleTimeoutMs, totalTimeoutMs, explainFailure, answerBinding }: RelayOptions,
    request: Pick<UpstreamRequest, 'relay' | 'check' | 'headers'>,
    resolve: (outcome: ExchangeOutcome) => void,
    reject: (failure: UpstreamFailure) => void,
    onSettled?: ExchangeObserver,
    /** Where an Error the relay answers with is written (its `error`), for the access line, metrics and span. */
    record?: Pick<ExchangeFacts, 'error'>,
  ) {
    this.record = record;
    this.res = res;
    this.relay = request.relay;
    this.check = request.check;
    this.answerBinding = answerBinding;
    // The proxy stage always sets it (upstreamHeaders), as a string.
    this.sentId = request.headers['x-request-id'] as string;
    this.resolve = resolve;
    this.reject = reject;
    this.onSettled = onSettled;
    this.idleTimeoutMs = idleTimeoutMs;
    this.explainFailure = explainFailure;
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
    if (this.answerBinding !== undefined && !boundToRequest(this.answerBinding, this.sentId, headers['x-request-id'])) {
      // Made for another request (a stray the backend wrote after an earlier answer): none of it is relayed, and the abort
      // closes the connection, on which every later answer would be one request late.
      this.fail(new UpstreamFailure('answer_mismatch', 'the answer carried an X-Request-Id other than the one sent, or none'));
      return;
    }
    if (hasUndecodedTransferCoding(headers)) {
      // Before anything is set on the response: the client gets a 502 Error on a connection it keeps,
      // and the abort (in fail) closes the upstream connection, whose framing is lost, instead of reusing it.
      this.fail(new UpstreamFailure('protocol', 'the answer is framed by a transfer coding other than chunked alone'));
      return;
    }
    this.status = statusCode;
    this.headers = headers;
    // A 401 or 403 is never relayed (it refuses the gateway, answered 502 upstream_refused_identity): nothing to check.
    if (this.check !== undefined && !refusesTheGateway(statusCode) && !this.checkHead(this.check, statusCode, headers)) return;
    if (statusCode >= 400) {
      this.errorBody = [];
      return;
    }
    if (this.holding) return;
    this.headersDropped = relayHead(statusCode, headers, this.res, this.relay, this.relayedNames);
    this.answered = true;
    if (statusCode === 204 || statusCode === 304) this.retireConnection();
  }

  /**
   * Checks the final head; returns false when the answer is refused already (enforce). Prepares the body's check when one follows:
   * a copy beside the relay (report), or the whole answer held back (enforce, success statuses; error bodies are read whole anyway).
   */
  private checkHead(check: AnswerCheck, status: number, headers: UpstreamHeaders): boolean {
    const res = this.res;
    const hasBody = !check.headOnly && status !== 204 && status !== 304;
    const contentType = headers['content-type'];
    const head = checkAnswerHead(
      check.operation.responses,
      status,
      (name) => headers[name] !== undefined || res.hasHeader(name),
      typeof contentType === 'string' ? contentType : contentType?.[0],
      hasBody,
      check.defaultCoversErrorsOnly,
    );
    if (head.violation !== undefined) {
      this.verdict = violation(check, head.violation);
      if (!check.enforce) return true;
      this.refuseAnswer();
      this.controller?.abort(ANSWER_REFUSED);
      return false;
    }
    if (head.body === undefined) {
      this.verdict = VALID;
      return true;
    }
    this.bodyRule = head.body;
    if (status < 400) {
      this.bodyCopy = [];
      this.holding = check.enforce;
    }
    return true;
  }

  /** Enforce: the client gets 502 upstream_contract_violation, none of the backend's answer. */
  private refuseAnswer(): void {
    this.answered = true;
    this.succeed({ status: this.status });
    this.refuse(contractViolationError());
  }

  /** The relay's one way to answer with an Error of its own: through sendRefusal, so the record carries its code. */
  private refuse(error: GatewayError): void {
    sendRefusal(this.res, this.record, error);
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
    if (this.bodyCopy !== undefined) {
      this.bodyCopySize += chunk.length;
      if (this.bodyCopySize <= (this.check?.maxBodyBytes ?? 0)) {
        this.bodyCopy.push(chunk);
        if (this.holding) return;
      } else {
        // Over the bound: relayed unchecked. A held answer is let go with what was held so far.
        this.verdict = TOO_LARGE;
        const held = this.holding ? this.bodyCopy : [];
        this.bodyCopy = undefined;
        if (this.holding) this.release();
        for (const part of held) this.res.write(part);
      }
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
      const body = this.errorBodySize > MAX_ERROR_BODY_BYTES ? undefined : Buffer.concat(this.errorBody);
      if (this.bodyRule !== undefined) {
        this.verdict = body === undefined || this.errorBodySize > this.check!.maxBodyBytes ? TOO_LARGE : this.checkWholeBody(body);
      }
      if (refusedUnderEnforce(this.check, this.verdict)) {
        this.refuseAnswer();
        return;
      }
      this.answered = true;
      // Written before the record is given its slice (in succeed), so the count is on it.
      this.headersDropped = answerUpstreamError(status, this.headers, body, res, this.relay, (error) => this.refuse(error));
      this.succeed({ status });
      return;
    }
    const copy = this.bodyCopy;
    if (copy === undefined) {
      this.succeed({ status });
      res.end();
      return;
    }
    const body = copy.length === 1 ? copy[0]! : Buffer.concat(copy, this.bodyCopySize);
    if (!this.holding) {
      // Report: the answer is complete for the client before its copy is checked.
      res.end();
      this.verdict = this.checkWholeBody(body);
      this.succeed({ status });
      return;
    }
    this.verdict = this.checkWholeBody(body);
    if (refusedUnderEnforce(this.check, this.verdict)) {
      this.refuseAnswer();
      return;
    }
    // Written as it arrived, part by part: the client gets the bytes and framing a relay as it streams would give.
    this.release();
    for (const part of copy) res.write(part);
    this.succeed({ status });
    res.end();
  }

  /** A held answer goes to the client: its head now, its body after. */
  private release(): void {
    this.holding = false;
    this.headersDropped = relayHead(this.status, this.headers, this.res, this.relay, this.relayedNames);
    this.answered = true;
  }

  private checkWholeBody(body: Buffer): AnswerVerdict {
    return checkBody(this.check!, this.bodyRule!, this.status, this.headers['content-encoding'], body);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (error === CLIENT_GONE || error === CONNECTION_RETIRED || error === ANSWER_REFUSED) return;
    if (error instanceof UpstreamFailure) {
      this.fail(error);
      return;
    }
    const cause = this.explainFailure?.(error) ?? error;
    this.fail(new UpstreamFailure(classifyUpstreamFailure(cause), cause.message, { cause }));
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
      ...(this.verdict === undefined ? {} : { contract: this.verdict }),
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
