// Ended spans, encoded when they are handed over (a request's once it completes), in a bounded queue sent in
// batches: the batch span processor's rules (OTEL_BSP_*) over encoded spans, so that no span object is kept
// until its batch is sent.

/**
 * How spans become an export request (OTLP/protobuf or OTLP/JSON). What ends (`Ended`) may be several spans
 * (a request's); each is one entry in the queue. An encoding may keep the bytes itself and queue only a
 * token (the protobuf encoding queues each span's length): `request` is given the oldest encoded spans, in
 * the order they were encoded, each once, and the batch keeps to that.
 */
export interface SpanEncoding<Ended, Encoded> {
  readonly contentType: string;
  /** How many spans `ended` is. */
  count(ended: Ended): number;
  /** Appends each span's encoding to `queue`, kept there instead of the span; on a throw, the queue is as it was. */
  encode(ended: Ended, queue: Encoded[]): void;
  /** The export request of a batch: the oldest spans encoded and not yet in a request. */
  request(spans: readonly Encoded[]): Uint8Array;
  /** Forgets every span encoded and not yet in a request (the batch empties its queue with it). */
  discard(): void;
}

/** Where batches go. */
export interface BatchSender {
  /** Sends one batch's export request (`spans` spans); calls `done` once, with whether the collector took it. */
  send(request: Uint8Array, spans: number, done: (delivered: boolean) => void): void;
  /** After the last batch: waits for sends under way, then closes. */
  shutdown(): Promise<void>;
}

/** The batch span processor's settings, as OTEL_BSP_* name them. */
export interface BatchOptions {
  maxQueueSize: number;
  scheduledDelayMillis: number;
  maxExportBatchSize: number;
  /** A batch whose send has not finished by then counts as lost, and the next is sent. */
  exportTimeoutMillis: number;
}

/**
 * The span processor of the gateway's spans, as the SDK's batch processor behaves: sampled spans queue (up
 * to `maxQueueSize`, past it dropped), a batch goes when `maxExportBatchSize` are queued or
 * `scheduledDelayMillis` after the first, one batch at a time, and `shutdown` sends what is left. Unlike
 * it, spans are encoded when they are handed over (a request's when it completes), so what waits in the
 * queue is a few bytes, not the span (the spans were most of what tracing cost in garbage collection:
 * docs/decisions/0019-spans-queued-as-bytes.md). `dropped`
 * counts what never reached the collector: a full queue, a failed or timed-out send.
 */
export class SpanBatch<Ended, Encoded> {
  dropped = 0;
  private queue: Encoded[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private closed = false;
  private readonly encoding: SpanEncoding<Ended, Encoded>;
  private readonly sender: BatchSender;
  private readonly options: BatchOptions;

  constructor(encoding: SpanEncoding<Ended, Encoded>, sender: BatchSender, options: BatchOptions) {
    this.encoding = encoding;
    this.sender = sender;
    this.options = { ...options, maxExportBatchSize: Math.min(options.maxExportBatchSize, options.maxQueueSize) };
  }

  /**
   * Sampled spans, ended (the tracing hands over no other, as the SDK's batch processor takes no other).
   * A request's spans are queued together, or dropped together when the queue has no room for them all;
   * a request of more spans than the whole queue holds is queued when the queue is empty, so that a small
   * OTEL_BSP_MAX_QUEUE_SIZE slows export, never stops it.
   */
  onEnd(ended: Ended): void {
    const count = this.encoding.count(ended);
    if (this.closed || (this.queue.length > 0 && this.queue.length + count > this.options.maxQueueSize)) {
      this.dropped += count;
      return;
    }
    try {
      this.encoding.encode(ended, this.queue);
    } catch {
      // Never thrown into the request that ended the spans: they are lost and counted (the encoding keeps step).
      this.dropped += count;
      return;
    }
    this.schedule();
  }

  /** Stops taking spans, sends every queued one (a batch after another), then shuts the sender down. */
  async shutdown(): Promise<void> {
    this.closed = true;
    this.clearTimer();
    await this.sending;
    while (this.queue.length > 0) await this.sendOne();
    await this.sender.shutdown();
  }

  private schedule(): void {
    if (this.sending !== undefined || this.closed) return;
    if (this.queue.length >= this.options.maxExportBatchSize) {
      void this.sendOne();
      return;
    }
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.sendOne();
    }, this.options.scheduledDelayMillis);
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private sendOne(): Promise<void> {
    this.clearTimer();
    const size = this.options.maxExportBatchSize;
    const spans = this.queue.length <= size ? this.queue : this.queue.slice(0, size);
    this.queue = this.queue.length <= size ? [] : this.queue.slice(size);
    if (spans.length === 0) return Promise.resolve();
    // Encoded now, in queue order, whatever the sender does later: the encoding may hold the spans' bytes.
    let request: Uint8Array;
    try {
      request = this.encoding.request(spans);
    } catch {
      // The encoding and the queue can no longer be trusted to agree: both start afresh, the spans counted lost.
      this.dropped += spans.length + this.queue.length;
      this.queue = [];
      this.encoding.discard();
      return Promise.resolve();
    }
    const sending = new Promise<void>((resolve) => {
      let settled = false;
      const finish = (delivered: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timeout);
        if (!delivered) this.dropped += spans.length;
        resolve();
      };
      const timeout = setTimeout(() => finish(false), this.options.exportTimeoutMillis);
      timeout.unref();
      try {
        this.sender.send(request, spans.length, finish);
      } catch {
        finish(false);
      }
    }).then(() => {
      this.sending = undefined;
      if (this.queue.length > 0) this.schedule();
    });
    this.sending = sending;
    return sending;
  }
}
