// A batch is sent again under its id until answered, the counts made since waiting apart; given up once its id may expire.
import { describe, expect, it } from 'vitest';
import { BATCH_RETRY_LIMIT_MS, onceBatches } from '../../../src/observability/once-batches.ts';
import { fixedClock } from '../../../src/time/clock.ts';

function harness() {
  const clock = fixedClock(0);
  const sent: Array<[string, number[]]> = [];
  const failures: boolean[] = [];
  let pending: number[] = [];
  let failing = false;
  const write = onceBatches<number[]>({
    clock,
    take() {
      if (pending.length === 0) return undefined;
      const batch = pending;
      pending = [];
      return batch;
    },
    async send(id, batch) {
      sent.push([id, [...batch]]);
      if (failing) throw new Error('no answer');
    },
    onFailure: (_error, givenUp) => failures.push(givenUp),
  });
  return {
    clock,
    sent,
    failures,
    write,
    count: (value: number) => pending.push(value),
    fail: (on: boolean) => {
      failing = on;
    },
  };
}

describe('batches sent at most once', () => {
  it('sends an unanswered batch again, alone and under its id, before the counts made since', async () => {
    const h = harness();
    h.count(1);
    h.fail(true);
    await h.write();
    h.count(2);
    await h.write();
    h.fail(false);
    await h.write();
    const [first, again, third, fourth] = h.sent;
    expect([first![1], again![1], third![1], fourth![1]]).toEqual([[1], [1], [1], [2]]);
    expect([again![0], third![0]]).toEqual([first![0], first![0]]);
    expect(fourth![0]).not.toBe(first![0]);
    expect(h.failures).toEqual([false, false]);
  });

  it('gives a batch up once it has been unanswered for the retry limit, then sends the next', async () => {
    const h = harness();
    h.count(1);
    h.fail(true);
    await h.write();
    h.clock.set(BATCH_RETRY_LIMIT_MS);
    await h.write();
    h.fail(false);
    h.count(2);
    await h.write();
    expect(h.sent.map(([, batch]) => batch)).toEqual([[1], [1], [2]]);
    expect(h.failures).toEqual([false, true]);
  });
});
