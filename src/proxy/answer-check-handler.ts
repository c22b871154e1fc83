// The answer check in the exchange's handler chain: the head checked as it arrives, the body once whole, beside the relay or held.
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { type BodyRule, checkAnswerHead } from '../contract/check-answer.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import { type AnswerCheck, type AnswerVerdict, checkBody, refusedUnderEnforce, TOO_LARGE, VALID, violation } from './answer-check.ts';
import type { AnswerFindings, AnswerRelay, ChainHandler } from './exchange-types.ts';
import { hasUndecodedTransferCoding, MAX_ERROR_BODY_BYTES, refusesTheGateway, type UpstreamHeaders } from './upstream-response.ts';

/** The reason an exchange is aborted with when its head already breaks the document and the client was answered 502. */
const ANSWER_REFUSED = new Error('the answer broke the interface document and was not relayed');

/** The client's answer when the backend's breaks the document under `enforce`. */
function contractViolationError(): GatewayError {
  return new GatewayError('upstream_contract_violation', 'The pet store backend answered outside the interface; the answer was not relayed');
}

/**
 * In the chain only for an answer that is checked (`contractResponses`: enforce, or report's sample), just before the relay.
 * `report`: the body's chunks are kept beside the relay and checked once the client has them all. `enforce`: a success answer is
 * held here until checked, then forwarded as it arrived, part by part, or refused; error answers the relay reads whole anyway.
 */
export class AnswerCheckHandler implements ChainHandler, AnswerFindings {
  private readonly next: AnswerRelay;
  private readonly check: AnswerCheck;
  private readonly res: ServerResponse;
  /** What the check found so far. */
  private found: AnswerVerdict | undefined;
  private status = 0;
  private headers: UpstreamHeaders = {};
  /** What the body is checked by, when it is: its bytes are kept in `copy` while within `limit`. */
  private rule: BodyRule | undefined;
  private copy: Buffer[] | undefined;
  private copySize = 0;
  private limit = 0;
  /** Enforce: the answer waits in `copy` until it is checked; the relay has not seen its head. */
  private holding = false;
  /** Report: the whole body's parts, checked when the relay settles (after the client has it). */
  private whole: Buffer[] | undefined;

  constructor(next: AnswerRelay, check: AnswerCheck, res: ServerResponse) {
    this.next = next;
    this.check = check;
    this.res = res;
    next.findings = this;
  }

  verdict(): AnswerVerdict | undefined {
    if (this.whole !== undefined) {
      this.found = this.checkWhole(this.whole);
      this.whole = undefined;
    }
    return this.found;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.next.onRequestStart(controller, context);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: UpstreamHeaders, statusMessage?: string): void {
    // Interim heads, answers the relay refuses before anything is checked (a framing it cannot read, a 401 or 403 refusing the
    // gateway: 502 upstream_refused_identity), and heads after the exchange ended go straight on.
    if (statusCode < 200 || this.next.settled || refusesTheGateway(statusCode) || hasUndecodedTransferCoding(headers)) {
      this.next.onResponseStart(controller, statusCode, headers, statusMessage);
      return;
    }
    this.status = statusCode;
    this.headers = headers;
    if (this.checkHead(statusCode, headers)) {
      if (this.holding) this.next.answerHeld(statusCode);
      else this.next.onResponseStart(controller, statusCode, headers, statusMessage);
      return;
    }
    this.next.refuseAnswer(statusCode, contractViolationError());
    controller.abort(ANSWER_REFUSED);
  }

  /** Checks the final head; false when it is refused already (enforce). Prepares the body's check when one follows. */
  private checkHead(status: number, headers: UpstreamHeaders): boolean {
    const { check, res } = this;
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
      this.found = violation(check, head.violation);
      return !check.enforce;
    }
    if (head.body === undefined) {
      this.found = VALID;
      return true;
    }
    this.rule = head.body;
    this.copy = [];
    // An error body is read whole by the relay up to its own bound; past either bound the answer is unchecked.
    this.limit = status < 400 ? check.maxBodyBytes : Math.min(check.maxBodyBytes, MAX_ERROR_BODY_BYTES);
    this.holding = status < 400 && check.enforce;
    return true;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const copy = this.copy;
    if (copy !== undefined) {
      this.copySize += chunk.length;
      if (this.copySize <= this.limit) {
        copy.push(chunk);
        if (this.holding) {
          this.next.answerHeld(this.status);
          return;
        }
      } else {
        // Over the bound: relayed unchecked. A held answer is let go with what was held so far.
        this.copy = undefined;
        if (this.status < 400) this.found = TOO_LARGE;
        if (this.holding) this.release(controller, copy);
      }
    }
    this.next.onResponseData(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: UpstreamHeaders): void {
    const { copy, next } = this;
    if (this.rule === undefined || next.settled || (this.status >= 400 && this.res.destroyed)) {
      next.onResponseEnd(controller, trailers);
      return;
    }
    if (copy === undefined) {
      this.found = TOO_LARGE;
      next.onResponseEnd(controller, trailers);
      return;
    }
    this.copy = undefined;
    // The copy's parts are checked as they arrived, not joined (a body stopped at a bound early is never joined).
    if (this.status < 400 && !this.holding) {
      // Report: the answer is complete for the client before its copy is checked (verdict(), as the relay settles).
      this.whole = copy;
      next.onResponseEnd(controller, trailers);
      return;
    }
    this.found = this.checkWhole(copy);
    if (refusedUnderEnforce(this.check, this.found)) {
      next.refuseAnswer(this.status, contractViolationError());
      return;
    }
    if (this.holding) this.release(controller, copy);
    next.onResponseEnd(controller, trailers);
  }

  /** A held answer goes to the relay: its head now, its body's parts as they arrived (the bytes and framing of an unchecked relay). */
  private release(controller: Dispatcher.DispatchController, parts: Buffer[]): void {
    this.holding = false;
    this.next.onResponseStart(controller, this.status, this.headers);
    for (const part of parts) this.next.onResponseData(controller, part);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    if (error !== ANSWER_REFUSED) this.next.onResponseError(controller, error);
  }

  private checkWhole(body: Buffer[]): AnswerVerdict {
    return checkBody(this.check, this.rule!, this.status, this.headers['content-encoding'], body);
  }
}
