// Usage in process: what a call counts as, the recorder's batches, and the report's query, rows and CSV.
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/errors/gateway-error.ts';
import { checkUsageQuery, toUsageCsv, toUsageRows } from '../../../src/observability/usage-report.ts';
import {
  createUsageRecorder,
  MemoryUsageStore,
  type NearLimitKeys,
  type UsageCount,
  type UsageStore,
  usageOutcomeOf,
} from '../../../src/observability/usage.ts';
import { fixedClock } from '../../../src/time/clock.ts';

const call = (rateLimitOutcome: 'allowed' | 'limited' | 'quota_exceeded' | 'store_unavailable' | undefined) => ({
  rateLimitOutcome,
  onStoreError: undefined,
  quota: undefined,
  caller: { keyId: 'key_a', name: 'acme' },
  route: { operation: { id: 'listPets' } },
});

describe('usageOutcomeOf', () => {
  it.each([
    ['allowed', undefined, 'admitted'],
    ['quota_exceeded', undefined, 'refusedQuota'],
    ['limited', undefined, 'refusedRateLimit'],
    ['store_unavailable', 'allow', 'admitted'],
    ['store_unavailable', 'deny', undefined],
    [undefined, undefined, undefined],
  ] as const)('counts %s (the store failing: %s) as %s', (outcome, onStoreError, usage) => {
    expect(usageOutcomeOf({ rateLimitOutcome: outcome, onStoreError })).toBe(usage);
  });
});

describe('the usage recorder', () => {
  it('keeps a batch the store refused, and writes it before the next', async () => {
    const memory = new MemoryUsageStore();
    let failing = true;
    const store: UsageStore = {
      add: (batch, near, id) => (failing ? Promise.reject(new Error('Redis is away')) : memory.add(batch, near, id)),
      read: (from, to, keyId) => memory.read(from, to, keyId),
    };
    const recorder = createUsageRecorder({ store, clock: fixedClock(Date.parse('2030-03-14T10:00:00Z')), flushIntervalMs: 3_600_000 });
    recorder.record(call('allowed'));
    await recorder.flush();
    failing = false;
    recorder.record(call('quota_exceeded'));
    await recorder.close();
    expect(await memory.read('2030-03-14', '2030-03-14')).toEqual([
      { day: '2030-03-14', keyId: 'key_a', operation: 'listPets', consumer: 'acme', admitted: 1, refusedQuota: 1, refusedRateLimit: 0 },
    ]);
  });

  it('counts each day, key and operation of one batch apart', async () => {
    const batches: (readonly UsageCount[])[] = [];
    const store: UsageStore = {
      add: async (batch) => {
        batches.push(batch);
        return { day: 0, month: 0 };
      },
      read: async () => [],
    };
    let now = Date.parse('2030-03-14T23:59:59Z');
    const recorder = createUsageRecorder({ store, clock: { now: () => now }, flushIntervalMs: 3_600_000 });
    const by = (keyId: string, operation: string) => ({ ...call('allowed'), caller: { keyId, name: keyId }, route: { operation: { id: operation } } });
    recorder.record(by('key_a', 'listPets'));
    recorder.record(by('key_a', 'getPet'));
    recorder.record(by('key_b', 'listPets'));
    recorder.record(by('key_a', 'listPets'));
    now += 1000;
    recorder.record(by('key_a', 'listPets'));
    await recorder.close();
    expect(batches.flat().map(({ day, keyId, operation, admitted }) => `${day} ${keyId} ${operation} ${admitted}`)).toEqual([
      '2030-03-14 key_a listPets 2',
      '2030-03-14 key_a getPet 1',
      '2030-03-14 key_b listPets 1',
      '2030-03-15 key_a listPets 1',
    ]);
  });

  it('notes a key at 80% of a quota as near its limit, and not one below', async () => {
    const seen: NearLimitKeys[] = [];
    const store: UsageStore = {
      add: async (_batch, near) => {
        seen.push(near);
        return { day: near.day.keyIds.size, month: near.month.keyIds.size };
      },
      read: async () => [],
    };
    const recorder = createUsageRecorder({ store, clock: fixedClock(Date.parse('2030-03-14T10:00:00Z')), flushIntervalMs: 3_600_000 });
    const endsAt = Date.parse('2030-03-15T00:00:00Z');
    recorder.record({ ...call('allowed'), quota: { day: { limit: 10, used: 8, endsAt } } });
    recorder.record({ ...call('allowed'), caller: { keyId: 'key_b', name: 'b' }, quota: { day: { limit: 10, used: 7, endsAt } } });
    await recorder.close();
    expect(seen.map((near) => [near.day.period, [...near.day.keyIds], near.month.period, [...near.month.keyIds]])).toEqual([
      ['2030-03-14', ['key_a'], '2030-03', []],
    ]);
  });
});

describe('checkUsageQuery', () => {
  it('takes day granularity when none is asked', () => {
    expect(checkUsageQuery({ from: '2028-02-29', to: '2028-03-01' }, 400)).toEqual({ from: '2028-02-29', to: '2028-03-01', granularity: 'day' });
  });

  it('refuses a granularity other than day or month', () => {
    expect(() => checkUsageQuery({ from: '2030-03-01', to: '2030-03-01', granularity: 'week' }, 400)).toThrow(GatewayError);
  });

  it('accepts a range of exactly the retention, and refuses one day more', () => {
    expect(() => checkUsageQuery({ from: '2030-01-01', to: '2030-01-10' }, 10)).not.toThrow();
    expect(() => checkUsageQuery({ from: '2030-01-01', to: '2030-01-11' }, 10)).toThrow('at most 10 days');
  });
});

describe('the report', () => {
  const count = (day: string, consumer: string, admitted: number): UsageCount => ({
    day,
    keyId: 'key_a',
    operation: 'listPets',
    consumer,
    admitted,
    refusedQuota: 0,
    refusedRateLimit: 0,
  });

  it("adds a month's days up, naming the consumer as last seen", () => {
    expect(toUsageRows([count('2030-03-02', 'new name', 2), count('2030-03-01', 'old name', 1)], 'month')).toEqual([
      { period: '2030-03', keyId: 'key_a', consumer: 'new name', operation: 'listPets', admitted: 3, refusedQuota: 0, refusedRateLimit: 0 },
    ]);
  });

  it("writes a consumer a spreadsheet would run as a formula after a '", () => {
    const csv = toUsageCsv(toUsageRows([count('2030-03-01', '=HYPERLINK("x")', 1)], 'day'));
    expect(csv.split('\r\n')[1]).toBe(`2030-03-01,key_a,"'=HYPERLINK(""x"")",listPets,1,0,0`);
  });
});
