// The exchange chain's outermost handler when a request is shadowed: tells its tap the upstream's answer as it arrives, relays all of it.
import type { Dispatcher } from 'undici';
import type { AnswerTap, ChainHandler } from './exchange-types.ts';
import type { UpstreamHeaders } from './upstream-response.ts';

export class AnswerTapHandler implements ChainHandler {
  private readonly next: ChainHandler;
  private tap: AnswerTap | undefined;

  constructor(next: ChainHandler, tap: AnswerTap) {
    this.next = next;
    this.tap = tap;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.next.onRequestStart(controller, context);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: UpstreamHeaders, statusMessage?: string): void {
    const tap = this.tap;
    if (tap !== undefined && statusCode >= 200) {
      tap.head(statusCode, headers);
      // The relay closes the connection at a 204's or 304's head (no end follows): they have no body to wait for.
      if (statusCode === 204 || statusCode === 304) {
        tap.end();
        this.tap = undefined;
      }
    }
    this.next.onResponseStart(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.tap !== undefined && !this.tap.chunk(chunk)) this.tap = undefined;
    this.next.onResponseData(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: UpstreamHeaders): void {
    this.tap?.end();
    this.tap = undefined;
    this.next.onResponseEnd(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.tap = undefined;
    this.next.onResponseError(controller, error);
  }
}
