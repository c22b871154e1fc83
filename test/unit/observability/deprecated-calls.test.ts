// Deprecated calls are counted in process and written in batches; a failed batch is sent again, as it was, under its id.
import { describe, expect, it } from 'vitest';
import {
  createDeprecatedCallRecorder,
  MemoryDeprecatedCallStore,
  toReportRows,
  type DeprecatedCallCount,
  type DeprecatedCallStore,
} from '../../../src/observability/deprecated-calls.ts';
import { fixedClock } from '../../../src/time/clock.ts';

const T = Date.parse('2026-11-21T12:00:00Z');
/** Long enough that the timer never fires during a test: flushes are explicit. */
const NEVER = 3_600_000;

/** A store that records each batch it is given, and fails while `failing` is set. */
function recordingStore(): DeprecatedCallStore & { batches: DeprecatedCallCount[][]; ids: string[]; failing: boolean } {
  return {
    batches: [],
    ids: [],
    failing: false,
    async add(batch, id) {
      this.ids.push(id);
      if (this.failing) throw new Error('redis down');
      this.batches.push(batch.map((count) => ({ ...count })));
    },
    async read() {
      return [];
    },
  };
}

describe('the deprecated-call recorder', () => {
  it('writes nothing until it flushes', async () => {
    const store = recordingStore();
    const recorder = createDeprecatedCallRecorder({ store, clock: fixedClock(T), flushIntervalMs: NEVER });
    recorder.record('getPet', 'key_a', 'acme');
    expect(store.batches).toEqual([]);
    await recorder.close();
  });

  it('writes one count per operation and key, with first and last seen', async () => {
    const store = recordingStore();
    const clock = fixedClock(T);
    const recorder = createDeprecatedCallRecorder({ store, clock, flushIntervalMs: NEVER });
    recorder.record('getPet', 'key_a', 'acme');
    clock.set(T + 1000);
    recorder.record('getPet', 'key_a', 'acme');
    recorder.record('getPet', 'key_b', 'globex');
    await recorder.flush();
    expect(store.batches).toEqual([
      [
        { operation: 'getPet', keyId: 'key_a', consumer: 'acme', calls: 2, firstSeen: T, lastSeen: T + 1000 },
        { operation: 'getPet', keyId: 'key_b', consumer: 'globex', calls: 1, firstSeen: T + 1000, lastSeen: T + 1000 },
      ],
    ]);
    await recorder.close();
  });

  it('sends a batch the store refused again under its id, never merged into the counts made since', async () => {
    const store = recordingStore();
    const clock = fixedClock(T);
    const recorder = createDeprecatedCallRecorder({ store, clock, flushIntervalMs: NEVER });
    recorder.record('getPet', 'key_a', 'acme');
    store.failing = true;
    await recorder.flush();
    clock.set(T + 5000);
    recorder.record('getPet', 'key_a', 'acme');
    await recorder.flush();
    store.failing = false;
    await recorder.flush();
    expect(store.batches).toEqual([
      [{ operation: 'getPet', keyId: 'key_a', consumer: 'acme', calls: 1, firstSeen: T, lastSeen: T }],
      [{ operation: 'getPet', keyId: 'key_a', consumer: 'acme', calls: 1, firstSeen: T + 5000, lastSeen: T + 5000 }],
    ]);
    // Three attempts of the first batch under one id, then the second under its own.
    expect(new Set(store.ids.slice(0, 3)).size).toBe(1);
    expect(store.ids).toHaveLength(4);
    expect(store.ids[3]).not.toBe(store.ids[0]);
    await recorder.close();
  });

  it('flushes what is left when closed', async () => {
    const store = recordingStore();
    const recorder = createDeprecatedCallRecorder({ store, clock: fixedClock(T), flushIntervalMs: NEVER });
    recorder.record('getPet', 'key_a', 'acme');
    await recorder.close();
    expect(store.batches).toEqual([[{ operation: 'getPet', keyId: 'key_a', consumer: 'acme', calls: 1, firstSeen: T, lastSeen: T }]]);
  });
});

describe('the memory store and the report rows', () => {
  it('adds batches up and prints ISO instants, most calls first', async () => {
    const store = new MemoryDeprecatedCallStore();
    await store.add([{ operation: 'getPet', keyId: 'key_a', consumer: 'acme', calls: 2, firstSeen: T + 10, lastSeen: T + 20 }], 'b1');
    await store.add(
      [
        { operation: 'getPet', keyId: 'key_a', consumer: 'acme', calls: 3, firstSeen: T, lastSeen: T + 15 },
        { operation: 'getPet', keyId: 'key_b', consumer: 'globex', calls: 9, firstSeen: T, lastSeen: T },
      ],
      'b2',
    );
    expect(toReportRows(await store.read(['getPet']))).toEqual([
      { operation: 'getPet', keyId: 'key_b', consumer: 'globex', calls: 9, firstSeen: '2026-11-21T12:00:00.000Z', lastSeen: '2026-11-21T12:00:00.000Z' },
      { operation: 'getPet', keyId: 'key_a', consumer: 'acme', calls: 5, firstSeen: '2026-11-21T12:00:00.000Z', lastSeen: '2026-11-21T12:00:00.020Z' },
    ]);
  });
});
