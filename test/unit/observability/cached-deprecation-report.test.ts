// The report the admin listener serves: one read per interval however many ask, a failed read not kept.
import { describe, expect, it } from 'vitest';
import { cacheDeprecationReport } from '../../../src/observability/cached-deprecation-report.ts';
import type { DeprecatedCallRow } from '../../../src/observability/deprecated-calls.ts';
import { fixedClock } from '../../../src/time/clock.ts';

const row = (operation: string, keyId: string, calls: number): DeprecatedCallRow => ({
  operation,
  keyId,
  consumer: 'acme',
  calls,
  firstSeen: '2030-01-01T00:00:00.000Z',
  lastSeen: '2030-01-01T00:00:00.000Z',
});

function counted(rows: () => Promise<DeprecatedCallRow[]>) {
  const clock = fixedClock(1_000_000);
  let reads = 0;
  const report = cacheDeprecationReport(
    () => {
      reads++;
      return rows();
    },
    { maxAgeMs: 5_000, clock },
  );
  return { clock, report, reads: () => reads };
}

describe('cacheDeprecationReport', () => {
  it('reads once for concurrent callers and for every caller of the interval', async () => {
    const { report, reads } = counted(async () => [row('getPet', 'key_a', 3)]);
    const answers = await Promise.all([report(), report(), report()]);
    await report();
    expect(answers).toEqual([[row('getPet', 'key_a', 3)], [row('getPet', 'key_a', 3)], [row('getPet', 'key_a', 3)]]);
    expect(reads()).toBe(1);
  });

  it('reads again once the report is maxAgeMs old', async () => {
    const { clock, report, reads } = counted(async () => []);
    await report();
    clock.set(1_000_000 + 5_001);
    await report();
    expect(reads()).toBe(2);
  });

  it('does not keep a failed read: the next caller reads again', async () => {
    let fail = true;
    const { report, reads } = counted(async () => {
      if (fail) throw new Error('redis away');
      return [];
    });
    await expect(report()).rejects.toThrow('redis away');
    fail = false;
    expect(await report()).toEqual([]);
    expect(reads()).toBe(2);
  });
});
