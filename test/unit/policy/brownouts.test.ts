// The brownout board: which window is in force at an instant, what operators override, what is listed.
import { describe, expect, it } from 'vitest';
import { BrownoutBoard, compileBrownoutSchedule } from '../../../src/policy/brownouts.ts';
import { loadContract } from '../../../src/contract/compile-contract.ts';
import { loadConfig } from '../../../src/config/load-config.ts';

const T = Date.parse('2030-06-02T14:00:00Z');
const HOUR = 3_600_000;
const scheduled = { start: T, end: T + 12 * HOUR };

function board(windows = [scheduled]): BrownoutBoard {
  return new BrownoutBoard(new Map([['getPet', windows]]));
}

describe('a scheduled window', () => {
  it.each([
    ['one millisecond before its start', T - 1, undefined],
    ['at its start', T, { operation: 'getPet', start: T, end: T + 12 * HOUR, source: 'schedule' }],
    ['one millisecond after its start', T + 1, { operation: 'getPet', start: T, end: T + 12 * HOUR, source: 'schedule' }],
    ['one millisecond before its end', T + 12 * HOUR - 1, { operation: 'getPet', start: T, end: T + 12 * HOUR, source: 'schedule' }],
    ['at its end', T + 12 * HOUR, undefined],
  ])('%s: %j', (_when, now, expected) => {
    expect(board().active('getPet', now)).toEqual(expected);
  });

  it('of two overlapping, the one that ends last is in force', () => {
    const longer = { start: T + HOUR, end: T + 24 * HOUR };
    expect(board([scheduled, longer]).active('getPet', T + 2 * HOUR)).toEqual({ operation: 'getPet', ...longer, source: 'schedule' });
  });

  it('concerns only its operation', () => {
    expect(board().active('listPets', T)).toBeUndefined();
  });
});

describe('operator overrides', () => {
  it('a started brownout is in force until its end', () => {
    const brownouts = board([]);
    brownouts.setOverride('getPet', { kind: 'started', start: T, end: T + HOUR });
    expect(brownouts.active('getPet', T + HOUR - 1)).toEqual({ operation: 'getPet', start: T, end: T + HOUR, source: 'operator' });
    expect(brownouts.active('getPet', T + HOUR)).toBeUndefined();
  });

  it('a stop cancels the scheduled window in progress until its end, not the next one', () => {
    const next = { start: T + 24 * HOUR, end: T + 36 * HOUR };
    const brownouts = board([scheduled, next]);
    brownouts.setOverride('getPet', { kind: 'stopped', until: scheduled.end });
    expect(brownouts.active('getPet', T + HOUR)).toBeUndefined();
    expect(brownouts.active('getPet', next.start)).toEqual({ operation: 'getPet', ...next, source: 'schedule' });
  });

  it('is ignored for an operation that is not deprecated', () => {
    const brownouts = board([]);
    brownouts.setOverride('listPets', { kind: 'started', start: T, end: T + HOUR });
    expect(brownouts.override('listPets')).toBeUndefined();
    expect(brownouts.active('listPets', T)).toBeUndefined();
  });
});

describe('list', () => {
  it('shows the window in force as active and later ones as scheduled, not past ones', () => {
    const past = { start: T - 48 * HOUR, end: T - 36 * HOUR };
    const next = { start: T + 24 * HOUR, end: T + 36 * HOUR };
    expect(board([past, scheduled, next]).list(T + HOUR)).toEqual([
      { operation: 'getPet', ...scheduled, source: 'schedule', state: 'active' },
      { operation: 'getPet', ...next, source: 'schedule', state: 'scheduled' },
    ]);
  });

  it('leaves out a scheduled window an operator stopped', () => {
    const brownouts = board();
    brownouts.setOverride('getPet', { kind: 'stopped', until: scheduled.end });
    expect(brownouts.list(T + HOUR)).toEqual([]);
  });

  it("shows an operator's brownout", () => {
    const brownouts = board([]);
    brownouts.setOverride('getPet', { kind: 'started', start: T, end: T + HOUR });
    expect(brownouts.list(T)).toEqual([{ operation: 'getPet', start: T, end: T + HOUR, source: 'operator', state: 'active' }]);
  });
});

describe('compileBrownoutSchedule', () => {
  const config = loadConfig({});
  const contract = loadContract(config.contractPath);
  const entry = (brownouts: Array<{ start: Date; end: Date }>) => ({ brownouts });

  it('lists every deprecated operation of the document, with its configured windows', () => {
    const schedule = compileBrownoutSchedule(contract.operations, { getPet: entry([{ start: new Date(T), end: new Date(T + HOUR) }]) });
    expect([...schedule]).toEqual([['getPet', [{ start: T, end: T + HOUR }]]]);
  });

  it('stops start-up for windows on an operation the document does not deprecate', () => {
    expect(() => compileBrownoutSchedule(contract.operations, { listPets: entry([{ start: new Date(T), end: new Date(T + HOUR) }]) })).toThrow(
      'config: deprecations.listPets.brownouts: listPets is not a deprecated operation of the interface document; only deprecated operations can be browned out',
    );
  });
});

describe('configuration', () => {
  it('stops start-up on a window that ends before it starts, naming the key', () => {
    expect(() => loadConfig({}, { deprecations: { getPet: { brownouts: [{ start: '2030-06-02T14:00:00Z', end: '2030-06-02T13:00:00Z' }] } } })).toThrow(
      'deprecations.getPet.brownouts.0.end: must be after start',
    );
  });

  it('stops start-up on a start that is not a date-time, naming the key', () => {
    expect(() => loadConfig({}, { deprecations: { getPet: { brownouts: [{ start: 'tomorrow', end: '2030-06-02T13:00:00Z' }] } } })).toThrow(
      'deprecations.getPet.brownouts.0.start: ',
    );
  });

  it('reads DEPRECATION_REPORT_FLUSH_MS, 5000 by default', () => {
    expect(loadConfig({}).deprecationReport.flushIntervalMs).toBe(5000);
    expect(loadConfig({ DEPRECATION_REPORT_FLUSH_MS: '250' }).deprecationReport.flushIntervalMs).toBe(250);
  });
});
