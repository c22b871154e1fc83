// The arithmetic of quotas: UTC periods, how many of a batch are admitted, and what each request is told.
import { describe, expect, it } from 'vitest';
import { admittedOf, quotaCounterKey, quotaCounters, readingAt } from '../../../src/limits/quota-count.ts';
import { periodAt } from '../../../src/limits/quota-periods.ts';

describe('periodAt', () => {
  it('names the UTC day and bounds it', () => {
    expect(periodAt('day', Date.parse('2030-03-14T23:59:59.999Z'))).toEqual({
      name: '2030-03-14',
      startsAt: Date.parse('2030-03-14T00:00:00Z'),
      endsAt: Date.parse('2030-03-15T00:00:00Z'),
    });
  });

  it('names the UTC month and bounds it across a year', () => {
    expect(periodAt('month', Date.parse('2030-12-31T12:00:00Z'))).toEqual({
      name: '2030-12',
      startsAt: Date.parse('2030-12-01T00:00:00Z'),
      endsAt: Date.parse('2031-01-01T00:00:00Z'),
    });
  });

  it("gives a leap year's February its 29 days", () => {
    const { startsAt, endsAt } = periodAt('month', Date.parse('2028-02-10T00:00:00Z'));
    expect((endsAt - startsAt) / 86_400_000).toBe(29);
  });
});

describe('quotaCounters and their keys', () => {
  it('lists the day before the month, each in the period holding now', () => {
    const counters = quotaCounters({ keyId: 'key_a', windowMs: 60_000, perWindow: 1, perDay: 5, perMonth: 50 }, Date.parse('2030-03-14T10:00:00Z'));
    expect(counters.map(({ period, limit, name }) => ({ period, limit, name }))).toEqual([
      { period: 'day', limit: 5, name: '2030-03-14' },
      { period: 'month', limit: 50, name: '2030-03' },
    ]);
    expect(quotaCounterKey('gw:quota:', 'key_a', counters[1]!)).toBe('gw:quota:{key_a}:month:2030-03');
  });
});

describe('admittedOf and readingAt', () => {
  const counters = quotaCounters({ keyId: 'key_a', windowMs: 60_000, perWindow: 10, perDay: 5 }, Date.parse('2030-03-14T10:00:00Z'));

  it('admits a batch up to the room the quota has left', () => {
    expect(admittedOf(4, 4, 10, counters, [3])).toBe(2);
  });

  it('admits none of a batch past the window limit', () => {
    expect(admittedOf(3, 13, 10, counters, [0])).toBe(0);
  });

  it('admits only the requests within the window limit', () => {
    expect(admittedOf(3, 11, 10, counters, [0])).toBe(2);
  });

  it('tells an admitted request its own use, and a refused one the period that refused it', () => {
    expect(readingAt(1, 2, true, counters, [3])).toEqual({ day: { limit: 5, used: 5, endsAt: counters[0]!.endsAt } });
    expect(readingAt(2, 2, true, counters, [3])).toEqual({ day: { limit: 5, used: 5, endsAt: counters[0]!.endsAt }, refused: 'day' });
  });

  it("names no quota's refusal for a request the window refused", () => {
    expect(readingAt(2, 0, false, counters, [5])).toEqual({ day: { limit: 5, used: 5, endsAt: counters[0]!.endsAt } });
  });

  it('names the month when both quotas are used up', () => {
    const both = quotaCounters({ keyId: 'key_a', windowMs: 60_000, perWindow: 10, perDay: 5, perMonth: 5 }, Date.parse('2030-03-14T10:00:00Z'));
    expect(readingAt(0, 0, true, both, [5, 5]).refused).toBe('month');
  });
});
