// The shadow report in process (no Redis): counted by hour, noise apart, bounded, never throwing, hours dropped after the retention.
import { describe, expect, it } from 'vitest';
import { assembleReport, MAX_POINTER_LENGTH } from '../../../src/shadow/report-model.ts';
import { createMemoryShadowReport } from '../../../src/shadow/report-store.ts';
import type { ShadowOutcome } from '../../../src/shadow/shadow-outcome.ts';
import { fixedClock } from '../../../src/time/clock.ts';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const T10 = Date.parse('2030-03-14T10:00:00Z');

const report = (clock = fixedClock(T10), retentionDays = 30) => createMemoryShadowReport({ clock, retentionDays, flushIntervalMs: HOUR });
const differ = (at: number, pointer: string): ShadowOutcome => ({
  operation: 'getPetById',
  result: 'differ',
  differences: [{ pointer, kind: 'value' }],
  noise: [],
  at,
});

describe('the shadow report in memory', () => {
  it('reads what was recorded without waiting for a flush', async () => {
    const shadow = report();
    shadow.record(differ(T10 + 1, '/name'));
    const [getPet] = (await shadow.read({ from: T10, to: T10 + HOUR })).operations;
    expect(getPet!.differences).toEqual([
      { pointer: '/name', kind: 'value', count: 1, firstSeen: '2030-03-14T10:00:00.001Z', lastSeen: '2030-03-14T10:00:00.001Z' },
    ]);
    await shadow.close();
  });

  it('never throws on what it cannot count, and counts nothing of it', async () => {
    const shadow = report();
    expect(() => shadow.record(null as unknown as ShadowOutcome)).not.toThrow();
    expect(() => shadow.record({ ...differ(Number.NaN, '/name') })).not.toThrow();
    expect(() => shadow.record({ ...differ(T10, '/name'), result: 'odd' as ShadowOutcome['result'] })).not.toThrow();
    expect(() => shadow.noteNoise({ operation: 'getPetById', pointer: 'x'.repeat(MAX_POINTER_LENGTH + 1), kind: 'value', at: T10 })).not.toThrow();
    expect((await shadow.read({ from: T10, to: T10 + HOUR })).operations).toEqual([]);
  });

  it('counts a pointer too long to list as unlisted', async () => {
    const shadow = report();
    shadow.record(differ(T10, `/${'x'.repeat(MAX_POINTER_LENGTH)}`));
    const [getPet] = (await shadow.read({ from: T10, to: T10 + HOUR })).operations;
    expect([getPet!.differences, getPet!.unlisted]).toEqual([[], 1]);
  });

  it('drops an hour once its retention has passed', async () => {
    const clock = fixedClock(T10);
    const shadow = report(clock, 1);
    shadow.record(differ(T10, '/name'));
    await shadow.flush();
    clock.set(T10 + HOUR + DAY - 1);
    expect((await shadow.read({ from: T10, to: T10 + HOUR })).operations).toHaveLength(1);
    clock.set(T10 + HOUR + DAY);
    expect((await shadow.read({ from: T10, to: T10 + HOUR })).operations).toEqual([]);
  });
});

describe('noise at read time', () => {
  it('reclassifies a difference by its learnt pointer and kind, or under a learnt pointer', () => {
    const tally = (pointer: string, kind: 'value' | 'extra') => ({ pointer, kind, count: 1, firstSeen: T10, lastSeen: T10 });
    const body = assembleReport(
      {
        buckets: [
          {
            hour: T10,
            operation: 'listPets',
            results: { differ: 3 },
            differences: [tally('/*/*', 'extra'), tally('/*/*', 'value'), tally('/meta/at', 'extra')],
            noise: [],
            unlisted: 0,
          },
        ],
        learnt: [
          { operation: 'listPets', pointer: '/*/*', kind: 'value', sightings: 2, firstSeen: T10, lastSeen: T10 },
          { operation: 'listPets', pointer: '/meta', kind: 'value', sightings: 1, firstSeen: T10, lastSeen: T10 },
        ],
      },
      { from: T10, to: T10 + HOUR },
    );
    const listed = (list: ReadonlyArray<{ pointer: string; kind: string }>) => list.map(({ pointer, kind }) => `${kind} ${pointer}`);
    expect([listed(body.operations[0]!.differences), listed(body.operations[0]!.noise)]).toEqual([['extra /*/*'], ['value /*/*', 'extra /meta/at']]);
    expect(body.operations[0]!.learntNoise.map(({ pointer, kind }) => `${kind} ${pointer}`)).toEqual(['value /*/*', 'value /meta']);
  });

  it('lists a difference learnt as noise under noise, added to the noise already counted there', () => {
    const tally = (count: number, at: number) => ({ pointer: '/meta/at', kind: 'value' as const, count, firstSeen: at, lastSeen: at });
    const body = assembleReport(
      {
        buckets: [
          { hour: T10, operation: 'listPets', results: { differ: 2, match: 1 }, differences: [tally(2, T10 + 5)], noise: [tally(1, T10 + 1)], unlisted: 0 },
        ],
        learnt: [{ operation: 'listPets', pointer: '/meta', sightings: 4, firstSeen: T10, lastSeen: T10 + 9 }],
      },
      { from: T10, to: T10 + HOUR },
    );
    expect(body.operations[0]!.differences).toEqual([]);
    expect(body.operations[0]!.noise).toEqual([
      { pointer: '/meta/at', kind: 'value', count: 3, firstSeen: '2030-03-14T10:00:00.001Z', lastSeen: '2030-03-14T10:00:00.005Z' },
    ]);
  });
});
