// The span batch as the batch span processor's rules have it: when a batch goes, what is dropped, what shutdown sends.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type BatchOptions, type BatchSender, SpanBatch, type SpanEncoding } from '../../../src/tracing/span-batch.ts';

/** What ends: a request's spans, each only its name (what the encoding below reads of one). */
type Ended = readonly string[];

function span(name: string): Ended {
  return [name];
}

const byName: SpanEncoding<Ended, string> = {
  contentType: 'text/plain',
  count: (ended) => ended.length,
  encode: (ended, queue) => {
    queue.push(...ended);
  },
  request: (spans) => Buffer.from(spans.join(',')),
  discard: () => undefined,
};

/** An encoding that cannot write spans named `bad`, nor a request with one named `unsendable`. */
function failingEncoding(): SpanEncoding<Ended, string> & { discarded: number } {
  const encoding = {
    ...byName,
    discarded: 0,
    encode: (ended: Ended, queue: string[]) => {
      if (ended.includes('bad')) throw new Error('cannot encode');
      queue.push(...ended);
    },
    request: (spans: readonly string[]) => {
      if (spans.includes('unsendable')) throw new Error('cannot make the request');
      return Buffer.from(spans.join(','));
    },
    discard: () => {
      encoding.discarded++;
    },
  };
  return encoding;
}

/** A sender that records each batch and answers when told. */
function recordingSender() {
  const batches: string[][] = [];
  const pending: ((delivered: boolean) => void)[] = [];
  const sender: BatchSender & { shutdowns: number } = {
    shutdowns: 0,
    send(request, spans, done) {
      const names = Buffer.from(request).toString().split(',');
      expect(names).toHaveLength(spans);
      batches.push(names);
      pending.push(done);
    },
    async shutdown() {
      sender.shutdowns++;
    },
  };
  return { sender, batches, answer: (delivered = true) => pending.shift()?.(delivered) };
}

const OPTIONS: BatchOptions = { maxQueueSize: 4, scheduledDelayMillis: 5000, maxExportBatchSize: 2, exportTimeoutMillis: 30_000 };

describe('SpanBatch', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends a batch as soon as maxExportBatchSize spans are queued', () => {
    const { sender, batches } = recordingSender();
    const batch = new SpanBatch(byName, sender, OPTIONS);
    batch.onEnd(span('a'));
    expect(batches).toEqual([]);
    batch.onEnd(span('b'));
    expect(batches).toEqual([['a', 'b']]);
  });

  it('sends fewer spans scheduledDelayMillis after the first was queued', () => {
    const { sender, batches } = recordingSender();
    const batch = new SpanBatch(byName, sender, OPTIONS);
    batch.onEnd(span('a'));
    vi.advanceTimersByTime(4999);
    expect(batches).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(batches).toEqual([['a']]);
  });

  it('sends one batch at a time, the next once the last is answered', async () => {
    const { sender, batches, answer } = recordingSender();
    const batch = new SpanBatch(byName, sender, OPTIONS);
    for (const name of ['a', 'b', 'c', 'd']) batch.onEnd(span(name));
    expect(batches).toEqual([['a', 'b']]);
    answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
  });

  it('drops and counts spans past maxQueueSize', () => {
    const { sender } = recordingSender();
    const batch = new SpanBatch(byName, sender, OPTIONS);
    // The first two are being sent; four more fill the queue; the seventh has no room.
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) batch.onEnd(span(name));
    expect(batch.dropped).toBe(1);
  });

  it("queues a request's spans together, or drops them together when the queue has no room for them all", () => {
    const { sender, batches } = recordingSender();
    const batch = new SpanBatch(byName, sender, { ...OPTIONS, maxExportBatchSize: 4 });
    batch.onEnd(['a', 'b', 'c']);
    expect(batches).toEqual([]);
    // One place left: a request of two spans is dropped whole, one of one span is queued.
    batch.onEnd(['d', 'e']);
    expect(batch.dropped).toBe(2);
    batch.onEnd(['f']);
    expect(batches).toEqual([['a', 'b', 'c', 'f']]);
  });

  it('queues a request of more spans than the whole queue holds when the queue is empty, and sends it in batches', async () => {
    const { sender, batches, answer } = recordingSender();
    const batch = new SpanBatch(byName, sender, OPTIONS);
    batch.onEnd(['a', 'b', 'c', 'd', 'e', 'f']);
    batch.onEnd(['g']);
    expect(batch.dropped).toBe(1);
    for (let sent = 0; sent < 3; sent++) {
      answer();
      await vi.advanceTimersByTimeAsync(0);
    }
    expect(batches).toEqual([
      ['a', 'b'],
      ['c', 'd'],
      ['e', 'f'],
    ]);
  });

  it('counts the spans of a batch the collector did not take', async () => {
    const { sender, answer } = recordingSender();
    const batch = new SpanBatch(byName, sender, OPTIONS);
    batch.onEnd(span('a'));
    batch.onEnd(span('b'));
    answer(false);
    await vi.advanceTimersByTimeAsync(0);
    expect(batch.dropped).toBe(2);
  });

  it('counts a batch unanswered after exportTimeoutMillis as lost, and sends the next', async () => {
    const { sender, batches } = recordingSender();
    const batch = new SpanBatch(byName, sender, OPTIONS);
    for (const name of ['a', 'b', 'c', 'd']) batch.onEnd(span(name));
    await vi.advanceTimersByTimeAsync(30_000);
    expect(batch.dropped).toBe(2);
    expect(batches).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
  });

  it('sends every queued span on shutdown, then shuts the sender down, and takes no more', async () => {
    const { sender, batches, answer } = recordingSender();
    const batch = new SpanBatch(byName, sender, OPTIONS);
    for (const name of ['a', 'b', 'c']) batch.onEnd(span(name));
    const done = batch.shutdown();
    answer();
    await vi.advanceTimersByTimeAsync(0);
    answer();
    await done;
    expect(batches).toEqual([['a', 'b'], ['c']]);
    expect(sender.shutdowns).toBe(1);
    batch.onEnd(span('late'));
    expect(batch.dropped).toBe(1);
  });

  it('counts the spans it cannot encode as dropped, without throwing into the request that ended them', () => {
    const { sender, batches } = recordingSender();
    const batch = new SpanBatch(failingEncoding(), sender, OPTIONS);
    expect(() => batch.onEnd(['ok', 'bad'])).not.toThrow();
    batch.onEnd(span('a'));
    batch.onEnd(span('b'));
    expect(batches).toEqual([['a', 'b']]);
    expect(batch.dropped).toBe(2);
  });

  it('starts afresh when a batch cannot be encoded: its spans and the queued ones counted, the encoding emptied', async () => {
    const { sender, batches, answer } = recordingSender();
    const encoding = failingEncoding();
    const batch = new SpanBatch(encoding, sender, { ...OPTIONS, maxQueueSize: 8 });
    batch.onEnd(span('a'));
    batch.onEnd(span('b'));
    batch.onEnd(span('unsendable'));
    batch.onEnd(span('c'));
    answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toEqual([['a', 'b']]);
    expect(batch.dropped).toBe(2);
    expect(encoding.discarded).toBe(1);
    batch.onEnd(span('d'));
    batch.onEnd(span('e'));
    expect(batches).toEqual([
      ['a', 'b'],
      ['d', 'e'],
    ]);
  });
});
