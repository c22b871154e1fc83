// The exchange's timers on a fake clock: the test plays undici's part, calling the relay handler as an upstream's answer would.
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ExchangeOutcome } from '../../../src/proxy/exchange.ts';
import { RelayHandler } from '../../../src/proxy/relay-handler.ts';
import { UpstreamFailure } from '../../../src/proxy/upstream-failure.ts';
import type { RelayPolicy } from '../../../src/proxy/upstream-response.ts';

const IDLE_MS = 1000;
const TOTAL_MS = 10_000;
const RELAY_CONTENT_TYPE: RelayPolicy = { relayedFor: () => new Set(['content-type']), secret: undefined };
const HEAD = { 'content-type': 'application/json' };

/** The client's response as the handler uses it: headers, writes the client takes while it reads, close and drain. */
class ClientResponse extends EventEmitter {
  statusCode = 200;
  readonly headers = new Map<string, unknown>();
  readonly written: Buffer[] = [];
  headersSent = false;
  writableNeedDrain = false;
  writableFinished = false;
  destroyed = false;
  /** False: the client stopped reading, so a write asks the writer to wait for 'drain'. */
  private reading = true;

  hasHeader(name: string): boolean {
    return this.headers.has(name.toLowerCase());
  }
  setHeader(name: string, value: unknown): this {
    this.headers.set(name.toLowerCase(), value);
    return this;
  }
  removeHeader(name: string): void {
    this.headers.delete(name.toLowerCase());
  }
  write(chunk: Buffer): boolean {
    this.headersSent = true;
    this.written.push(chunk);
    this.writableNeedDrain = !this.reading;
    return this.reading;
  }
  end(): void {
    this.headersSent = true;
    this.writableFinished = true;
  }
  destroy(): void {
    this.destroyed = true;
  }
  stopReading(): void {
    this.reading = false;
  }
  /** The client reads what it was sent: the writer hears 'drain'. */
  readAgain(): void {
    this.reading = true;
    this.writableNeedDrain = false;
    this.emit('drain');
  }
}

/** undici's side of the exchange: what the handler asks of the connection. */
class Controller implements Dispatcher.DispatchController {
  aborted = false;
  paused = false;
  reason: Error | null = null;
  abort(reason: Error): void {
    this.aborted = true;
    this.reason = reason;
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
}

type Settled = { relayed: ExchangeOutcome } | { failed: UpstreamFailure } | undefined;

/** One exchange under way; `settled` is what it resolved or rejected with, as the handler reports it (synchronously). */
function exchange() {
  const res = new ClientResponse();
  const controller = new Controller();
  const state: { settled: Settled } = { settled: undefined };
  const handler = new RelayHandler(
    res as unknown as ServerResponse,
    { idleTimeoutMs: IDLE_MS, totalTimeoutMs: TOTAL_MS },
    { relay: RELAY_CONTENT_TYPE, check: undefined, headers: { 'x-request-id': 'relay-unit-0001' } },
    (outcome) => (state.settled = { relayed: outcome }),
    (failure) => (state.settled = { failed: failure }),
  );
  const chunk = () => handler.onResponseData(controller, Buffer.from('[{"id":1}]'));
  return { res, controller, handler, state, chunk, head: (status = 200) => handler.onResponseStart(controller, status, HEAD) };
}

/**
 * Lets the fake clock run, then one turn of the event loop: the handler declares a silence only after
 * a setImmediate (it reads its sockets first), which is left real.
 */
async function pass(ms: number): Promise<void> {
  vi.advanceTimersByTime(ms);
  await new Promise((resolve) => setImmediate(resolve));
}

const failedWith = (kind: string, message: string) => ({ failed: expect.objectContaining({ kind, message }) });
const cutShortBy = (kind: string) => ({ relayed: { status: 200, upstreamMs: expect.any(Number), failure: kind } });

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
});
afterEach(() => vi.useRealTimers());

describe('the idle timer, before the head', () => {
  it('fails the exchange with headers_timeout after idleTimeoutMs without a byte, and aborts the request', async () => {
    const { handler, controller, state } = exchange();
    handler.onRequestStart(controller);
    await pass(IDLE_MS - 1);
    expect(state.settled).toBeUndefined();
    await pass(1);
    expect(state.settled).toEqual(failedWith('headers_timeout', `nothing from the upstream for ${IDLE_MS} ms`));
    expect(controller.reason).toBeInstanceOf(UpstreamFailure);
  });

  it('is armed when the request is sent, not while it waits for a connection', async () => {
    const { handler, controller, state } = exchange();
    await pass(3 * IDLE_MS);
    handler.onRequestStart(controller);
    await pass(IDLE_MS - 1);
    expect(state.settled).toBeUndefined();
    await pass(1);
    expect(state.settled).toEqual(failedWith('headers_timeout', `nothing from the upstream for ${IDLE_MS} ms`));
  });

  it('is re-armed by an interim 1xx head; the silence after it is still a headers_timeout', async () => {
    const { handler, controller, state, head } = exchange();
    handler.onRequestStart(controller);
    await pass(600);
    head(100);
    await pass(IDLE_MS - 1);
    expect(state.settled).toBeUndefined();
    await pass(1);
    expect(state.settled).toEqual(failedWith('headers_timeout', `nothing from the upstream for ${IDLE_MS} ms`));
  });
});

describe('the idle timer, within the answer', () => {
  it('fails with idle_timeout after a head with no body yet; the head never left, so the client gets an Error', async () => {
    const { handler, controller, state, head, res } = exchange();
    handler.onRequestStart(controller);
    head();
    expect(res.headers.get('content-type')).toBe('application/json');
    await pass(IDLE_MS);
    expect(state.settled).toEqual(failedWith('idle_timeout', `nothing from the upstream for ${IDLE_MS} ms`));
    expect(res.hasHeader('content-type')).toBe(false);
  });

  it('is re-armed by each chunk, and cuts the answer short at idleTimeoutMs after the last', async () => {
    const { handler, controller, state, head, chunk, res } = exchange();
    handler.onRequestStart(controller);
    head();
    for (let i = 0; i < 3; i++) {
      await pass(IDLE_MS - 100);
      chunk();
    }
    await pass(IDLE_MS - 1);
    expect(state.settled).toBeUndefined();
    await pass(1);
    expect(state.settled).toEqual(cutShortBy('idle_timeout'));
    expect(res.written).toHaveLength(3);
    expect(res.destroyed).toBe(true);
    expect(controller.reason).toEqual(expect.objectContaining({ kind: 'idle_timeout' }));
  });

  it('counts no silence when a chunk arrives before the check runs (the process itself stalled)', async () => {
    const { handler, controller, state, head, chunk } = exchange();
    handler.onRequestStart(controller);
    head();
    vi.advanceTimersByTime(IDLE_MS);
    // Read from the socket after the timer fired and before the check the timer deferred to setImmediate.
    chunk();
    await pass(0);
    expect(state.settled).toBeUndefined();
    await pass(IDLE_MS - 1);
    expect(state.settled).toBeUndefined();
    await pass(1);
    expect(state.settled).toEqual(cutShortBy('idle_timeout'));
  });
});

describe('the total timer', () => {
  it('cuts a steady answer short at totalTimeoutMs, however often chunks arrive', async () => {
    const { handler, controller, state, head, chunk, res } = exchange();
    handler.onRequestStart(controller);
    head();
    for (let elapsed = 0; elapsed < TOTAL_MS - 500; elapsed += 500) {
      await pass(500);
      chunk();
    }
    await pass(499);
    expect(state.settled).toBeUndefined();
    await pass(1);
    expect(state.settled).toEqual(cutShortBy('total_timeout'));
    expect(res.destroyed).toBe(true);
  });

  it("runs from the exchange's start: a request still waiting for a connection fails with total_timeout, and is never sent", async () => {
    const { handler, controller, state } = exchange();
    await pass(TOTAL_MS - 1);
    expect(state.settled).toBeUndefined();
    await pass(1);
    expect(state.settled).toEqual(failedWith('total_timeout', `no complete answer within ${TOTAL_MS} ms`));
    expect(() => handler.onRequestStart(controller)).toThrow('the client closed its connection');
  });

  it('is cleared with the idle timer when the answer completes', async () => {
    const { handler, controller, state, head, chunk } = exchange();
    handler.onRequestStart(controller);
    head();
    chunk();
    handler.onResponseEnd();
    expect(vi.getTimerCount()).toBe(0);
    await pass(2 * TOTAL_MS);
    expect(state.settled).toEqual({ relayed: { status: 200, upstreamMs: expect.any(Number) } });
  });
});

describe('a slow client', () => {
  it('pauses the upstream; the silence while paused is not counted, and the idle timer is re-armed when the client drains', async () => {
    const { handler, controller, state, head, chunk, res } = exchange();
    handler.onRequestStart(controller);
    head();
    res.stopReading();
    chunk();
    expect(controller.paused).toBe(true);
    await pass(5 * IDLE_MS);
    expect(state.settled).toBeUndefined();
    res.readAgain();
    expect(controller.paused).toBe(false);
    await pass(IDLE_MS - 1);
    expect(state.settled).toBeUndefined();
    await pass(1);
    expect(state.settled).toEqual(cutShortBy('idle_timeout'));
  });

  it("does not stop the total timer: an answer the client stalls past totalTimeoutMs is ended as the client's doing", async () => {
    const { handler, controller, state, head, chunk, res } = exchange();
    handler.onRequestStart(controller);
    head();
    res.stopReading();
    chunk();
    await pass(TOTAL_MS);
    expect(state.settled).toEqual({ relayed: { status: 200, upstreamMs: expect.any(Number), clientClosed: true } });
    expect(res.destroyed).toBe(true);
  });
});
