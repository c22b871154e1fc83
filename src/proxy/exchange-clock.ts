// The exchange's clocks and pace, under the handler that relays its answer: the upstream's silences, the whole exchange's bound, a slow client.
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { UpstreamFailure } from './upstream-failure.ts';

/** The reason an exchange is aborted with when the client leaves: never reported as an upstream failure. */
export const CLIENT_GONE = new Error('the client closed its connection');

/**
 * Times one exchange: a total bound from its start, and a silence bound armed as the request is sent and re-armed by every part of
 * the answer (`heard`), not counted while the client is slow. A base class, not an object of its own: the relay is the one
 * allocation the clocks cost per exchange.
 */
export abstract class ExchangeClock {
  protected controller: Dispatcher.DispatchController | undefined;
  /** The exchange has ended (answered, failed or left by the client): later callbacks find nothing to do. */
  settled = false;
  /** The upstream's final status, once its head arrived. */
  protected status = 0;
  /** The client is slow and the upstream paused for it: its silence is then not the upstream's. */
  protected paused = false;
  private readonly totalTimer: NodeJS.Timeout;
  /** Silence from the upstream: armed as the request is sent, re-armed by every part of the answer. */
  private idleTimer: NodeJS.Timeout | undefined;
  /** Parts of the answer received (its heads, its body's chunks): told apart from a silence. */
  private progress = 0;
  private readonly idleTimeoutMs: number;
  protected readonly res: ServerResponse;
  private readonly onClientClose = () => this.clientClosed();
  private readonly onDrain = () => {
    if (this.settled) return;
    this.paused = false;
    this.idleTimer?.refresh();
    this.controller?.resume();
  };

  constructor(res: ServerResponse, idleTimeoutMs: number, totalTimeoutMs: number) {
    this.res = res;
    this.idleTimeoutMs = idleTimeoutMs;
    this.totalTimer = setTimeout(() => this.fail(new UpstreamFailure('total_timeout', `no complete answer within ${totalTimeoutMs} ms`)), totalTimeoutMs);
    res.once('close', this.onClientClose);
  }

  /** Ends the exchange as failed (a timeout, or the upstream's error). */
  protected abstract fail(failure: UpstreamFailure): void;

  /** The client closed its connection. */
  protected abstract clientClosed(): void;

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Settled while waiting for a connection: thrown, not aborted, so undici drops the request and keeps the
    // healthy pooled connection that an abort would destroy.
    if (this.settled) throw CLIENT_GONE;
    this.controller = controller;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.silent(), this.idleTimeoutMs);
  }

  /** A part of the answer arrived: the upstream is not silent. */
  protected heard(): void {
    this.progress++;
    this.idleTimer?.refresh();
  }

  /** Writes a part of the answer to the client. */
  protected write(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // A client that reads slowly slows the upstream down, rather than the gateway buffering for it.
    // undici may hand over a chunk while paused (the upstream closed): one drain listener is enough.
    if (!this.res.write(chunk) && !this.paused) {
      this.paused = true;
      controller.pause();
      this.res.once('drain', this.onDrain);
    }
  }

  /** Settles the exchange: the clocks stop and the client's events are no longer listened to. False when it was settled already. */
  protected finish(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.totalTimer);
    clearTimeout(this.idleTimer);
    this.res.off('close', this.onClientClose);
    this.res.off('drain', this.onDrain);
    return true;
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
}
