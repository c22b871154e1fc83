// The shadow report in a real Redis: replicas add into one report, hours selected by from/to, noise apart, retention, bounds, a stall.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_POINTERS } from '../../src/shadow/report-model.ts';
import { createRedisShadowReport, type ShadowReport } from '../../src/shadow/report-store.ts';
import type { ShadowOutcome } from '../../src/shadow/shadow-outcome.ts';
import { fixedClock } from '../../src/time/clock.ts';
import { scaled } from '../../support/time-scale.ts';
import { startStoreRedis, type StoreRedis } from '../helpers/start-store-redis.ts';

const PREFIX = 'test-gateway:';
const HOUR = 3_600_000;
const DAY = 86_400_000;
const T10 = Date.parse('2030-03-14T10:00:00Z');

let storeRedis: StoreRedis;
const reports: ShadowReport[] = [];

beforeAll(async () => {
  storeRedis = await startStoreRedis();
});
afterAll(async () => {
  for (const report of reports) await report.close().catch(() => undefined);
  await storeRedis?.stop();
});
beforeEach(() => storeRedis.empty());

/** One replica's report on its own request-path connection; flushed by the test, never by its timer. */
async function replica(clock = fixedClock(T10), retentionDays = 30, observe?: (seconds: number, failed: boolean) => void): Promise<ShadowReport> {
  const client = await storeRedis.connect('shadow-report-test');
  const report = createRedisShadowReport(client, { keyPrefix: PREFIX, clock, retentionDays, flushIntervalMs: 3_600_000, ...(observe ? { observe } : {}) });
  reports.push(report);
  return report;
}

const outcome = (at: number, result: ShadowOutcome['result'], differences: ShadowOutcome['differences'] = [], noise: ShadowOutcome['noise'] = []) => ({
  operation: 'getPetById',
  result,
  differences,
  noise,
  at,
});

describe('the shadow report in Redis', () => {
  it('adds two replicas’ comparisons into one report', async () => {
    const [a, b] = [await replica(), await replica()];
    a.record(outcome(T10 + 1000, 'match'));
    a.record(outcome(T10 + 2000, 'differ', [{ pointer: '/nickname', kind: 'extra' }]));
    b.record(outcome(T10 + 3000, 'differ', [{ pointer: '/nickname', kind: 'extra' }]));
    b.record(outcome(T10 + 4000, 'staging_error'));
    b.record({ ...outcome(T10 + 5000, 'skipped'), operation: 'listPets' });
    await a.flush();
    await b.flush();
    expect(await a.read({ from: T10, to: T10 + HOUR })).toEqual({
      from: '2030-03-14T10:00:00.000Z',
      to: '2030-03-14T11:00:00.000Z',
      operations: [
        {
          operation: 'getPetById',
          results: { match: 1, differ: 2, staging_error: 1, staging_off_contract: 0, skipped: 0 },
          comparisons: 4,
          differences: [{ pointer: '/nickname', kind: 'extra', count: 2, firstSeen: '2030-03-14T10:00:02.000Z', lastSeen: '2030-03-14T10:00:03.000Z' }],
          noise: [],
          learntNoise: [],
          unlisted: 0,
        },
        {
          operation: 'listPets',
          results: { match: 0, differ: 0, staging_error: 0, staging_off_contract: 0, skipped: 1 },
          comparisons: 0,
          differences: [],
          noise: [],
          learntNoise: [],
          unlisted: 0,
        },
      ],
    });
  });

  it('asks Redis nothing per comparison, and one script per flush whatever it holds', async () => {
    const report = await replica();
    const commands = async () => {
      const stats = await storeRedis.redis.client.info('commandstats');
      return [...stats.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].filter(([, name]) => name !== 'info').reduce((sum, match) => sum + Number(match[2]), 0);
    };
    const before = await commands();
    for (let index = 0; index < 100; index++) {
      report.record(outcome(T10 + index * 60_000, 'differ', [{ pointer: `/p${index % 7}`, kind: 'value' }], [{ pointer: '/at', kind: 'value' }]));
      report.noteNoise({ operation: 'listPets', pointer: '/at', kind: 'value', at: T10 + index });
    }
    expect(await commands()).toBe(before);
    await report.flush();
    const scripts = await storeRedis.redis.client.info('commandstats');
    // EVALSHA once the script is known to Redis, EVAL the first time (the commands the script runs are counted apart).
    const calls = (command: string) => Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(scripts)?.[1] ?? 0);
    expect(calls('evalsha') + calls('eval')).toBe(1);
  });

  it('survives its replica: a new one on another connection reads what was written', async () => {
    const first = await replica();
    first.record(outcome(T10, 'match'));
    await first.close();
    const next = await replica();
    expect((await next.read({ from: T10, to: T10 + HOUR })).operations.map((operation) => operation.results.match)).toEqual([1]);
  });

  it('selects the hours that overlap from/to, and one operation when asked', async () => {
    const report = await replica();
    report.record(outcome(T10 + 10 * 60_000, 'match'));
    report.record(outcome(T10 + HOUR + 1, 'differ', [{ pointer: '/status', kind: 'status' }]));
    report.record(outcome(T10 + 2 * HOUR + 1, 'differ', [{ pointer: '/status', kind: 'status' }]));
    report.record({ ...outcome(T10 + HOUR + 2, 'match'), operation: 'listPets' });
    await report.flush();
    const eleven = await report.read({ from: T10 + HOUR + 30 * 60_000, to: T10 + 2 * HOUR });
    expect(eleven.from).toBe('2030-03-14T11:00:00.000Z');
    expect(eleven.to).toBe('2030-03-14T12:00:00.000Z');
    expect(eleven.operations.map((operation) => [operation.operation, operation.results.match, operation.results.differ])).toEqual([
      ['getPetById', 0, 1],
      ['listPets', 1, 0],
    ]);
    const all = await report.read({ from: T10, to: T10 + 3 * HOUR, operation: 'getPetById' });
    expect(all.operations.map((operation) => [operation.operation, operation.results.match, operation.results.differ])).toEqual([['getPetById', 1, 2]]);
    expect(all.operations[0]!.differences).toEqual([
      { pointer: '/status', kind: 'status', count: 2, firstSeen: '2030-03-14T11:00:00.001Z', lastSeen: '2030-03-14T12:00:00.001Z' },
    ]);
  });

  it('lists noise apart: outcomes’ noise, and differences at a pointer learnt as noise after they were counted', async () => {
    const [a, b] = [await replica(), await replica()];
    a.record(
      outcome(T10 + 1000, 'differ', [
        { pointer: '/requestedAt', kind: 'value' },
        { pointer: '/name', kind: 'missing' },
      ]),
    );
    await a.flush();
    // Learnt by another replica later: the difference already counted moves to noise at read time.
    b.noteNoise({ operation: 'getPetById', pointer: '/requestedAt', kind: 'value', at: T10 + 2000 });
    b.noteNoise({ operation: 'getPetById', pointer: '/requestedAt', kind: 'value', at: T10 + 2500 });
    b.record(outcome(T10 + 3000, 'match', [], [{ pointer: '/requestedAt', kind: 'value' }]));
    await b.flush();
    const [getPet] = (await a.read({ from: T10, to: T10 + HOUR })).operations;
    expect(getPet!.differences).toEqual([
      { pointer: '/name', kind: 'missing', count: 1, firstSeen: '2030-03-14T10:00:01.000Z', lastSeen: '2030-03-14T10:00:01.000Z' },
    ]);
    expect(getPet!.noise).toEqual([
      { pointer: '/requestedAt', kind: 'value', count: 2, firstSeen: '2030-03-14T10:00:01.000Z', lastSeen: '2030-03-14T10:00:03.000Z' },
    ]);
    expect(getPet!.learntNoise).toEqual([
      { pointer: '/requestedAt', kind: 'value', sightings: 2, firstSeen: '2030-03-14T10:00:02.000Z', lastSeen: '2030-03-14T10:00:02.500Z' },
    ]);
  });

  it('reads noise learnt by a build that kept no kind as any kind, and writes kinds where that build does not read', async () => {
    const learnt = `${PREFIX}{shadow}:noise:getPetById`;
    // As the build before wrote it: by pointer alone.
    await storeRedis.redis.client.hset(learnt, 'c|/*', '3', 'f|/*', String(T10), 'l|/*', String(T10 + 1), '#', '1');
    const report = await replica();
    report.noteNoise({ operation: 'getPetById', pointer: '/name', kind: 'value', at: T10 + 2000 });
    report.record(
      outcome(T10 + 3000, 'differ', [
        { pointer: '/*', kind: 'extra' },
        { pointer: '/name', kind: 'missing' },
      ]),
    );
    await report.flush();
    const [getPet] = (await report.read({ from: T10, to: T10 + HOUR })).operations;
    expect(getPet!.differences.map(({ pointer, kind }) => `${kind} ${pointer}`)).toEqual(['missing /name']);
    expect(getPet!.noise.map(({ pointer, kind }) => `${kind} ${pointer}`)).toEqual(['extra /*']);
    expect(getPet!.learntNoise).toEqual([
      { pointer: '/*', sightings: 3, firstSeen: '2030-03-14T10:00:00.000Z', lastSeen: '2030-03-14T10:00:00.001Z' },
      { pointer: '/name', kind: 'value', sightings: 1, firstSeen: '2030-03-14T10:00:02.000Z', lastSeen: '2030-03-14T10:00:02.000Z' },
    ]);
    // The build before reads `c|` fields only: its own entry, never one of this build's it would take for a pointer.
    const fields = Object.keys(await storeRedis.redis.client.hgetall(learnt)).sort();
    expect(fields).toEqual(['#', 'c|/*', 'f|/*', 'k|#', 'k|c|value|/name', 'k|f|value|/name', 'k|l|value|/name', 'l|/*']);
  });

  it('keeps each hour retentionDays after it ends, by the gateway’s clock', async () => {
    const clock = fixedClock(T10 + 30 * 60_000);
    const report = await replica(clock, 2);
    report.record(outcome(T10 + 1000, 'match'));
    report.noteNoise({ operation: 'getPetById', pointer: '/requestedAt', kind: 'value', at: T10 + 1000 });
    await report.flush();
    const ttl = (key: string) => storeRedis.redis.client.pttl(`${PREFIX}{shadow}:${key}`);
    // The hour ends 30 minutes after the clock's now; learnt noise is kept retentionDays after its last flush.
    expect(await ttl('h:2030-03-14T10:op:getPetById')).toBeGreaterThan(2 * DAY + 30 * 60_000 - 5000);
    expect(await ttl('h:2030-03-14T10:op:getPetById')).toBeLessThanOrEqual(2 * DAY + 30 * 60_000);
    expect(await ttl('h:2030-03-14T10:ops')).toBeLessThanOrEqual(2 * DAY + 30 * 60_000);
    expect(await ttl('noise:getPetById')).toBeLessThanOrEqual(2 * DAY);
    expect(await ttl('noise:getPetById')).toBeGreaterThan(2 * DAY - 5000);
    // A batch of an hour already past its retention (retried for days) writes nothing.
    clock.set(T10 + 3 * DAY + HOUR);
    report.record(outcome(T10 + 2000, 'match'));
    await report.flush();
    expect(await storeRedis.redis.client.hget(`${PREFIX}{shadow}:h:2030-03-14T10:op:getPetById`, 'r|match')).toBe('1');
  });

  it(`lists at most ${MAX_POINTERS} pointers an operation and hour, counting the rest as unlisted, across replicas`, async () => {
    const [a, b] = [await replica(), await replica()];
    for (let index = 0; index < 150; index++) a.record(outcome(T10 + index, 'differ', [{ pointer: `/a${index}`, kind: 'extra' }]));
    for (let index = 0; index < 150; index++) b.record(outcome(T10 + index, 'differ', [{ pointer: `/b${index}`, kind: 'extra' }]));
    // A pointer already listed is still counted after the cap is reached.
    b.record(outcome(T10 + 200, 'differ', [{ pointer: '/a0', kind: 'extra' }]));
    await a.flush();
    await b.flush();
    const [getPet] = (await a.read({ from: T10, to: T10 + HOUR })).operations;
    expect(getPet!.differences).toHaveLength(MAX_POINTERS);
    expect(getPet!.unlisted).toBe(300 - MAX_POINTERS);
    expect(getPet!.differences.find((entry) => entry.pointer === '/a0')!.count).toBe(2);
    expect(getPet!.results.differ).toBe(301);
  });

  it('counts a comparison once however often its pointer repeats in it (array elements)', async () => {
    const report = await replica();
    report.record(
      outcome(T10, 'differ', [
        { pointer: '/*/status', kind: 'value' },
        { pointer: '/*/status', kind: 'value' },
        { pointer: '/*/status', kind: 'type' },
      ]),
    );
    await report.flush();
    const [getPet] = (await report.read({ from: T10, to: T10 + HOUR })).operations;
    expect(getPet!.differences.map((entry) => [entry.pointer, entry.kind, entry.count])).toEqual([
      ['/*/status', 'type', 1],
      ['/*/status', 'value', 1],
    ]);
  });

  it('adds a batch once when Redis stalled past the command timeout while it ran', async () => {
    const failures: boolean[] = [];
    const report = await replica(fixedClock(T10), 30, (_seconds, failed) => failures.push(failed));
    const pid = Number(/^process_id:(\d+)/m.exec(await storeRedis.redis.client.info('server'))![1]);
    for (let index = 0; index < 3; index++) report.record(outcome(T10 + index, 'differ', [{ pointer: '/name', kind: 'missing' }]));
    process.kill(pid, 'SIGSTOP');
    try {
      // The script is on the wire: it times out here (500 ms), and Redis runs it when it resumes.
      await report.flush();
      report.record(outcome(T10 + 10, 'match'));
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(failures).toEqual([true]);
    await sleep(scaled(200));
    // The unanswered batch goes again under its id (added nothing), then the new one.
    await report.flush();
    await report.flush();
    expect(failures).toEqual([true, false, false]);
    const [getPet] = (await report.read({ from: T10, to: T10 + HOUR })).operations;
    expect(getPet!.results).toEqual({ match: 1, differ: 3, staging_error: 0, staging_off_contract: 0, skipped: 0 });
    expect(getPet!.differences.map((entry) => entry.count)).toEqual([3]);
  });
});
