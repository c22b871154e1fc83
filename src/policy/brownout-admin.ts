// What operators do with brownouts: list, start, stop, on every replica. Behind the CLI and the admin API alike.
import { RefusalError } from '../errors/refusal-error.ts';
import type { RedisClient } from '../redis/connect.ts';
import type { Clock } from '../time/clock.ts';
import { publishBrownoutOverride, readBrownoutOverrides } from './brownout-events.ts';
import { BrownoutBoard, type BrownoutSchedule } from './brownouts.ts';

/** A brownout as `npm run deprecations -- brownout list --json` and `GET /admin/brownouts` give it (an interface: keep it). */
export interface BrownoutRow {
  operation: string;
  state: 'active' | 'scheduled';
  source: 'operator' | 'schedule';
  start: string;
  end: string;
}

/** What a stop did: the scheduled window in progress, if any, stays cancelled until `scheduledUntil`. */
export interface StoppedBrownout {
  operation: string;
  scheduledUntil?: string;
}

export type BrownoutAdminRefusal = 'not_deprecated' | 'not_in_progress';

export class BrownoutAdminError extends RefusalError<BrownoutAdminRefusal> {
  override name = 'BrownoutAdminError';
}

/** The brownout operations, done on Redis (BrownoutAdmin) or asked of a gateway's admin API (src/cli/admin-client.ts). */
export interface BrownoutOperations {
  list(): Promise<BrownoutRow[]>;
  start(operation: string, minutes: number): Promise<BrownoutRow>;
  stop(operation: string): Promise<StoppedBrownout>;
}

export interface BrownoutAdminOptions {
  keyPrefix: string;
  /** The deprecated operations and their scheduled windows: the CLI's from its documents, a gateway's as last reloaded. */
  schedule: () => BrownoutSchedule;
  clock: Clock;
}

const iso = (ms: number) => new Date(ms).toISOString();

export class BrownoutAdmin implements BrownoutOperations {
  readonly #redis: RedisClient;
  readonly #options: BrownoutAdminOptions;

  constructor(redis: RedisClient, options: BrownoutAdminOptions) {
    this.#redis = redis;
    this.#options = options;
  }

  async list(): Promise<BrownoutRow[]> {
    const board = await this.#board();
    return board.list(this.#options.clock.now()).map((entry) => ({
      operation: entry.operation,
      state: entry.state,
      source: entry.source,
      start: iso(entry.start),
      end: iso(entry.end),
    }));
  }

  /** From now for `minutes`; every replica refuses the operation (410 brownout) within a second. */
  async start(operation: string, minutes: number): Promise<BrownoutRow> {
    this.#requireDeprecated(operation);
    const now = this.#options.clock.now();
    const window = { start: now, end: now + minutes * 60_000 };
    await publishBrownoutOverride(this.#redis, this.#options.keyPrefix, operation, { kind: 'started', ...window }, now);
    return { operation, state: 'active', source: 'operator', start: iso(window.start), end: iso(window.end) };
  }

  /** Ends the brownout in progress, an operator's or a scheduled window's (cancelled until its end, or it would resume). */
  async stop(operation: string): Promise<StoppedBrownout> {
    this.#requireDeprecated(operation);
    const now = this.#options.clock.now();
    const board = await this.#board();
    if (!board.active(operation, now)) throw new BrownoutAdminError('not_in_progress', `no brownout of ${operation} is in progress`);
    const scheduledEnd = Math.max(
      ...(this.#options.schedule().get(operation) ?? []).filter((window) => window.start <= now && now < window.end).map((window) => window.end),
    );
    const override = Number.isFinite(scheduledEnd) ? ({ kind: 'stopped', until: scheduledEnd } as const) : undefined;
    await publishBrownoutOverride(this.#redis, this.#options.keyPrefix, operation, override, now);
    return { operation, ...(override ? { scheduledUntil: iso(override.until) } : {}) };
  }

  #requireDeprecated(operation: string): void {
    const schedule = this.#options.schedule();
    if (schedule.has(operation)) return;
    const deprecated = [...schedule.keys()].join(', ') || 'none';
    throw new BrownoutAdminError(
      'not_deprecated',
      `'${operation}' is not a deprecated operation of the interface document; only deprecated operations can be browned out (deprecated: ${deprecated})`,
    );
  }

  /** Read from Redis, not a replica's board: what every replica will hold, including another's change not yet announced here. */
  async #board(): Promise<BrownoutBoard> {
    const board = new BrownoutBoard(this.#options.schedule());
    for (const [operation, override] of await readBrownoutOverrides(this.#redis, this.#options.keyPrefix, board.operations))
      board.setOverride(operation, override);
    return board;
  }
}
