// Batches a store adds at most once: an unanswered batch is sent again under its id, never merged into the next.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../time/clock.ts';

/**
 * How long a store keeps a batch's id (with the counts, in the same script): an attempt landing within it is
 * recognised and adds nothing. Kept longer than any retry (`BATCH_RETRY_LIMIT_MS`), so no retry outlives its id.
 */
export const BATCH_ID_KEPT_MS = 86_400_000;

/** A batch still unanswered after this long is dropped (logged) rather than sent once its id may have expired. */
export const BATCH_RETRY_LIMIT_MS = BATCH_ID_KEPT_MS / 2;

export interface OnceBatchesOptions<T> {
  /** Takes what was counted since the last take (and starts afresh); undefined when there is nothing. */
  take(): T | undefined;
  /** Adds `batch` under `id`: a store that has seen `id` adds nothing and answers as if it had. */
  send(id: string, batch: T): Promise<void>;
  clock: Clock;
  /** Told of each failed attempt, and whether the batch was given up (past `BATCH_RETRY_LIMIT_MS`). */
  onFailure(error: unknown, givenUp: boolean): void;
}

/**
 * The write of a periodic flush. At most one batch is unanswered at a time: while it is, new counts wait in
 * `take`'s map and the unanswered batch goes again, the same counts under the same id. A batch whose first
 * attempt Redis ran late (a timeout while the command was on the wire) is then not added again by its retries.
 */
export function onceBatches<T>(options: OnceBatchesOptions<T>): () => Promise<void> {
  const writer = randomUUID();
  let sequence = 0;
  let unanswered: { id: string; batch: T; since: number } | undefined;

  async function attempt(entry: { id: string; batch: T; since: number }): Promise<boolean> {
    try {
      await options.send(entry.id, entry.batch);
      unanswered = undefined;
      return true;
    } catch (error) {
      const givenUp = options.clock.now() - entry.since >= BATCH_RETRY_LIMIT_MS;
      unanswered = givenUp ? undefined : entry;
      options.onFailure(error, givenUp);
      return false;
    }
  }

  return async function write(): Promise<void> {
    if (unanswered !== undefined && !(await attempt(unanswered))) return;
    const batch = options.take();
    if (batch === undefined) return;
    await attempt({ id: `${writer}:${++sequence}`, batch, since: options.clock.now() });
  };
}
