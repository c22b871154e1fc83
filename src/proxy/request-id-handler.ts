// The request-id check in the exchange's handler chain: an answer not bound to its request (X-Request-Id) is never relayed.
import type { Dispatcher } from 'undici';
import { type AnswerBinding, boundToRequest } from './answer-binding.ts';
import type { ChainHandler } from './exchange-types.ts';
import { UpstreamFailure } from './upstream-failure.ts';
import type { UpstreamHeaders } from './upstream-response.ts';

/**
 * Looks at the final head alone and forwards every callback to the next handler, in the shape of undici's DecoratorHandler.
 * In the chain only when `upstream.requestIdEcho` is not `off`.
 */
export class RequestIdHandler implements ChainHandler {
  private readonly next: ChainHandler;
  private readonly binding: AnswerBinding;
  /** The X-Request-Id sent with the request, which its answer echoes. */
  private readonly sentId: string;

  constructor(next: ChainHandler, binding: AnswerBinding, sentId: string) {
    this.next = next;
    this.binding = binding;
    this.sentId = sentId;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.next.onRequestStart(controller, context);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: UpstreamHeaders, statusMessage?: string): void {
    // 1xx answers are interim (RFC 9110 §15.2): the final one carries the id.
    if (statusCode >= 200 && !boundToRequest(this.binding, this.sentId, headers['x-request-id'])) {
      // Made for another request (a stray the backend wrote after an earlier answer): none of it is relayed, and the next
      // handlers fail the exchange, whose abort closes the connection, on which every later answer would be one request late.
      this.next.onResponseError(controller, new UpstreamFailure('answer_mismatch', 'the answer carried an X-Request-Id other than the one sent, or none'));
      return;
    }
    this.next.onResponseStart(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.next.onResponseData(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: UpstreamHeaders): void {
    this.next.onResponseEnd(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.next.onResponseError(controller, error);
  }
}
