// Which deprecated operations are browned out when: windows scheduled in config and what operators set (kept in Redis).
import type { Operation } from '../contract/operations.ts';

/** From `start` (inclusive) to `end` (exclusive), in milliseconds since the epoch. */
export interface BrownoutWindow {
  start: number;
  end: number;
}

/** What an operator set for one operation: a brownout, or a stop cancelling scheduled windows until `until`. */
export type BrownoutOverride = ({ kind: 'started' } & BrownoutWindow) | { kind: 'stopped'; until: number };

export type BrownoutSource = 'operator' | 'schedule';

export interface ActiveBrownout extends BrownoutWindow {
  operation: string;
  source: BrownoutSource;
}

export interface ListedBrownout extends ActiveBrownout {
  state: 'active' | 'scheduled';
}

/** By operationId: the scheduled windows of each deprecated operation (none: an empty list). */
export type BrownoutSchedule = ReadonlyMap<string, readonly BrownoutWindow[]>;

/** Every version's deprecated operations and their windows; a window for an operation none deprecates stops start-up. */
export function compileBrownoutSchedule(
  operations: readonly Operation[],
  policies: Readonly<Record<string, { brownouts: ReadonlyArray<{ start: Date; end: Date }> }>>,
): BrownoutSchedule {
  const schedule = new Map<string, readonly BrownoutWindow[]>();
  for (const operation of operations) {
    if (!operation.deprecation) continue;
    const windows = policies[operation.id]?.brownouts ?? [];
    schedule.set(
      operation.id,
      windows.map(({ start, end }) => ({ start: start.getTime(), end: end.getTime() })),
    );
  }
  for (const [id, entry] of Object.entries(policies)) {
    if (entry.brownouts.length > 0 && !schedule.has(id)) {
      throw new Error(
        `config: deprecations.${id}.brownouts: ${id} is not a deprecated operation of the interface document; only deprecated operations can be browned out`,
      );
    }
  }
  return schedule;
}

/** One process's view of the brownouts, read in memory on the request path; overrides kept while Redis is away. */
export class BrownoutBoard {
  #schedule: BrownoutSchedule;
  readonly #overrides = new Map<string, BrownoutOverride>();

  constructor(schedule: BrownoutSchedule) {
    this.#schedule = schedule;
  }

  /** The windows of a reloaded configuration; overrides stay but for operations no longer deprecated. */
  replaceSchedule(schedule: BrownoutSchedule): void {
    this.#schedule = schedule;
    for (const operation of this.#overrides.keys()) if (!schedule.has(operation)) this.#overrides.delete(operation);
  }

  /** The deprecated operations and their scheduled windows in force (a reload replaces them). */
  get schedule(): BrownoutSchedule {
    return this.#schedule;
  }

  /** The operations that can be browned out: the deprecated ones. */
  get operations(): readonly string[] {
    return [...this.#schedule.keys()];
  }

  isDeprecated(operation: string): boolean {
    return this.#schedule.has(operation);
  }

  override(operation: string): BrownoutOverride | undefined {
    return this.#overrides.get(operation);
  }

  /** Sets (or, with undefined, clears) an operation's override; operations that are not deprecated are ignored. */
  setOverride(operation: string, override: BrownoutOverride | undefined): void {
    if (!this.#schedule.has(operation)) return;
    if (override) this.#overrides.set(operation, override);
    else this.#overrides.delete(operation);
  }

  /** The brownout in force at `now`, if any; of overlapping windows, the one that ends last. */
  active(operation: string, now: number): ActiveBrownout | undefined {
    const windows = this.#schedule.get(operation);
    if (!windows) return undefined;
    const override = this.#overrides.get(operation);
    if (override?.kind === 'started' && override.start <= now && now < override.end) {
      return { operation, start: override.start, end: override.end, source: 'operator' };
    }
    if (override?.kind === 'stopped' && now < override.until) return undefined;
    let found: BrownoutWindow | undefined;
    for (const window of windows) if (window.start <= now && now < window.end && (!found || window.end > found.end)) found = window;
    return found && { operation, start: found.start, end: found.end, source: 'schedule' };
  }

  /** Active and future brownouts, by operation and start. */
  list(now: number): ListedBrownout[] {
    const listed: ListedBrownout[] = [];
    for (const [operation, windows] of this.#schedule) {
      const override = this.#overrides.get(operation);
      const candidates: ActiveBrownout[] = windows.map((window) => ({ operation, ...window, source: 'schedule' }));
      if (override?.kind === 'started') candidates.push({ operation, start: override.start, end: override.end, source: 'operator' });
      const active = this.active(operation, now);
      for (const candidate of candidates) {
        if (candidate.end <= now) continue;
        const isActive = active?.source === candidate.source && active.start === candidate.start && active.end === candidate.end;
        // A scheduled window an operator stopped, or hidden under an operator's, is not in force.
        if (!isActive && candidate.start <= now) continue;
        listed.push({ ...candidate, state: isActive ? 'active' : 'scheduled' });
      }
    }
    return listed.sort((a, b) => a.operation.localeCompare(b.operation) || a.start - b.start);
  }
}
