// The span batch as the batch span processor's rules have it: when a batch goes, what is dropped, what shutdown sends.
import { TraceFlags } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type BatchOptions, type BatchSender, SpanBatch, type SpanEncoding } from '../../../src/tracing/span-batch.ts';

/** A span that is only its name and whether it is sampled: what the batch reads of one. */
function span(name: string, sampled = true): ReadableSpan {
  return {
    name,
    spanContext: () => ({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE }),
  } as ReadableSpan;
}

const byName: SpanEncoding<string> = { contentType: 'text/plain', span: (ended) => ended.name, request: (spans) => Buffer.from(spans.join(',')) };

/** A sender that records each batch and answers when told. */
function recordingSender() {
  const batches: string[][] = [];
  const pending: ((delivered: boolean) => void)[] = [];
  const sender: BatchSender<string> & { shutdowns: number } = {
    shutdowns: 0,
    send(spans, done) {
      batches.push([...spans]);
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

  it('queues no span that is not sampled', () => {
    const { sender, batches } = recordingSender();
    const batch = new SpanBatch(byName, sender, OPTIONS);
    batch.onEnd(span('a', false));
    vi.advanceTimersByTime(5000);
    expect(batches).toEqual([]);
    expect(batch.dropped).toBe(0);
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
});
