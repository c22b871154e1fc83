// The last handler of the exchange's chain: relays the upstream's answer to the client as it arrives, and settles the exchange.
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { GatewayError } from '../errors/gateway-error.ts';
import { sendRefusal } from '../errors/send-error.ts';
import { CLIENT_GONE, ExchangeClock } from './exchange-clock.ts';
import type { AnswerFindings, AnswerRelay, ExchangeFacts, ExchangeObserver, ExchangeOutcome, UpstreamOptions, UpstreamRequest } from './exchange-types.ts';
import { classifyUpstreamFailure, failureDetail, UpstreamFailure } from './upstream-failure.ts';
import {
  answerUpstreamError,
  hasUndecodedTransferCoding,
  MAX_ERROR_BODY_BYTES,
  relayHead,
  type RelayPolicy,
  type UpstreamHeaders,
} from './upstream-response.ts';

/** The reason an exchange whose answer is complete is aborted with, to close a connection that is not to be reused. */
const CONNECTION_RETIRED = new Error('the upstream connection is not reused after a bodiless answer');

/** The exchange's timers, and what its upstream can say about a failure undici reported in its own words (TlsAlerts). */
export type RelayOptions = Pick<UpstreamOptions, 'idleTimeoutMs' | 'totalTimeoutMs'> & { explainFailure?: (error: Error) => Error };

/** One exchange's relay: success answers stream to the client as they come; error answers are read first (see answerUpstreamError). */
export class RelayHandler extends ExchangeClock implements AnswerRelay {
  private headers: UpstreamHeaders = {};
  /** The upstream's answer is the client's: its head is set on the response (sent with the first body bytes). */
  private answered = false;
  /** The upstream's header names set on the response, removed again if the exchange fails before they are sent. */
  private readonly relayedNames: string[] = [];
  /** Header fields of the answer the relay policy dropped. */
  private headersDropped = 0;
  private errorBody: Buffer[] | undefined;
  private errorBodySize = 0;
  /** The answer check, when the answer is checked: its verdict goes on the slice. */
  findings: AnswerFindings | undefined;
  private readonly startedAt = performance.now();
  private readonly relay: RelayPolicy;
  private readonly resolve: (outcome: ExchangeOutcome) => void;
  private readonly reject: (failure: UpstreamFailure) => void;
  private readonly onSettled: ExchangeObserver | undefined;
  private readonly explainFailure: ((error: Error) => Error) | undefined;
  private readonly record: Pick<ExchangeFacts, 'error'> | undefined;

  constructor(
    res: ServerResponse,
    { idleTimeoutMs, totalTimeoutMs, explainFailure }: RelayOptions,
    /** The request: the relay reads its relay policy alone (the handlers before it read the rest). */
    request: Pick<UpstreamRequest, 'relay'> & Partial<UpstreamRequest>,
    resolve: (outcome: ExchangeOutcome) => void,
    reject: (failure: UpstreamFailure) => void,
    onSettled?: ExchangeObserver,
    /** Where an Error the relay answers with is written (its `error`), for the access line, metrics and span. */
    record?: Pick<ExchangeFacts, 'error'>,
  ) {
    super(res, idleTimeoutMs, totalTimeoutMs);
    this.record = record;
    this.relay = request.relay;
    this.resolve = resolve;
    this.reject = reject;
    this.onSettled = onSettled;
    this.explainFailure = explainFailure;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: UpstreamHeaders): void {
    if (this.settled) return;
    this.heard();
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

  answerHeld(status: number): void {
    if (this.settled) return;
    this.status = status;
    this.heard();
  }

  refuseAnswer(status: number, error: GatewayError): void {
    if (this.settled) return;
    this.status = status;
    this.answered = true;
    this.succeed({ status });
    // The relay's Errors all go through sendRefusal, so the record carries their code.
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
    this.heard();
    if (this.errorBody !== undefined) {
      this.errorBodySize += chunk.length;
      if (this.errorBodySize <= MAX_ERROR_BODY_BYTES) this.errorBody.push(chunk);
      return;
    }
    this.write(controller, chunk);
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
      this.answered = true;
      // Written before the record is given its slice (in succeed), so the count is on it.
      this.headersDropped = answerUpstreamError(status, this.headers, body, res, this.relay, (error) => sendRefusal(res, this.record, error));
      this.succeed({ status });
      return;
    }
    // The client's answer is complete before the exchange settles: a checked copy (report) is checked then (findings).
    res.end();
    this.succeed({ status });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    if (error === CLIENT_GONE || error === CONNECTION_RETIRED) return;
    if (error instanceof UpstreamFailure) {
      this.fail(error);
      return;
    }
    const cause = this.explainFailure?.(error) ?? error;
    this.fail(new UpstreamFailure(classifyUpstreamFailure(cause), cause.message, { cause }));
  }

  /** Ends the exchange as failed: an Error answer if nothing was relayed, a cut response otherwise. */
  protected override fail(failure: UpstreamFailure): void {
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
      this.onSettled?.({ failure: failure.kind, failureDetail: failureDetail(failure) });
      this.reject(failure);
    }
    // Settled first: the error undici reports for this abort finds nothing left to do.
    this.controller?.abort(failure);
  }

  protected override clientClosed(): void {
    if (this.settled || this.res.writableFinished) return;
    this.succeed({ status: this.status, clientClosed: true });
    this.controller?.abort(CLIENT_GONE);
  }

  /** `cutShort` is the failure that cut a relayed answer short, when one did. */
  private succeed(outcome: Omit<ExchangeOutcome, 'upstreamMs'>, cutShort?: UpstreamFailure): void {
    if (!this.finish()) return;
    // Read first: a report check of the whole body runs here, after the client has it, and its time is the exchange's.
    const verdict = this.findings?.verdict();
    const complete = { ...outcome, upstreamMs: performance.now() - this.startedAt };
    this.onSettled?.({
      status: complete.status,
      ms: complete.upstreamMs,
      ...(complete.failure && cutShort ? { failure: complete.failure, failureDetail: failureDetail(cutShort) } : {}),
      ...(this.headersDropped > 0 ? { headersDropped: this.headersDropped } : {}),
      ...(verdict === undefined ? {} : { contract: verdict }),
    });
    this.resolve(complete);
  }
}
