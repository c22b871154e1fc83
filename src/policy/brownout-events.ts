// Operator brownouts in Redis, announced over pub/sub so every replica applies a start or stop within a second.
import type { Logger } from 'pino';
import type { RedisClient } from '../redis/connect.ts';
import { followChannel } from '../redis/subscription.ts';
import type { BrownoutBoard, BrownoutOverride } from './brownouts.ts';

/** One STRING per operation, its override as JSON, expiring with it; `{deprecations}` keeps one slot for one MGET. */
function brownoutLayout(prefix: string): { override(operation: string): string; events: string } {
  return {
    override: (operation) => `${prefix}{deprecations}:brownout:${operation}`,
    events: `${prefix}brownout-events`,
  };
}

interface StoredOverride {
  kind: 'started' | 'stopped';
  start?: string;
  end?: string;
  until?: string;
}

function toStored(override: BrownoutOverride): StoredOverride {
  return override.kind === 'started'
    ? { kind: 'started', start: new Date(override.start).toISOString(), end: new Date(override.end).toISOString() }
    : { kind: 'stopped', until: new Date(override.until).toISOString() };
}

function fromStored(value: unknown): BrownoutOverride | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const stored = value as StoredOverride;
  const at = (text: string | undefined) => (typeof text === 'string' ? Date.parse(text) : Number.NaN);
  if (stored.kind === 'started') {
    const [start, end] = [at(stored.start), at(stored.end)];
    return Number.isNaN(start) || Number.isNaN(end) ? undefined : { kind: 'started', start, end };
  }
  if (stored.kind === 'stopped') {
    const until = at(stored.until);
    return Number.isNaN(until) ? undefined : { kind: 'stopped', until };
  }
  return undefined;
}

function parse(text: string | null): BrownoutOverride | undefined {
  if (text === null) return undefined;
  try {
    return fromStored(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/** Stores an operation's override (none: deleted) and announces it to every replica. */
export async function publishBrownoutOverride(
  redis: RedisClient,
  prefix: string,
  operation: string,
  override: BrownoutOverride | undefined,
  now: number,
): Promise<void> {
  const layout = brownoutLayout(prefix);
  if (override) {
    const expiresAt = override.kind === 'started' ? override.end : override.until;
    await redis.set(layout.override(operation), JSON.stringify(toStored(override)), 'PX', Math.max(1, expiresAt - now));
  } else {
    await redis.del(layout.override(operation));
  }
  await redis.publish(layout.events, JSON.stringify({ operation, override: override ? toStored(override) : null }));
}

/** The stored overrides of these operations (absent: none). */
export async function readBrownoutOverrides(
  redis: RedisClient,
  prefix: string,
  operations: readonly string[],
): Promise<Map<string, BrownoutOverride | undefined>> {
  const layout = brownoutLayout(prefix);
  const values = operations.length === 0 ? [] : await redis.mget(...operations.map((operation) => layout.override(operation)));
  return new Map(operations.map((operation, index) => [operation, parse(values[index] ?? null)]));
}

export interface BrownoutFollowerOptions {
  /** Reads the stored overrides (the request-path client: it fails at once while Redis is away). */
  redis: RedisClient;
  /** A connection in subscriber mode (shared with the key events). */
  subscriber: RedisClient;
  keyPrefix: string;
  board: BrownoutBoard;
  /** How often the stored overrides are read again, besides every re-subscription: heals lost announcements. */
  resyncMs: number;
  logger?: Logger;
}

export interface BrownoutFollower {
  /** Reads every stored override into the board; on failure the last known state is kept. */
  resync(): Promise<void>;
  close(): void;
}

/**
 * Applies announced overrides at once, and reads them all on every (re-)subscription (announcements made while
 * disconnected are lost), when the reading connection comes up, and every `resyncMs`. Without Redis the board keeps
 * the last known state; a brownout still ends by the process's clock.
 */
export function followBrownouts(options: BrownoutFollowerOptions): BrownoutFollower {
  const { redis, subscriber, keyPrefix, board, logger } = options;
  const { events } = brownoutLayout(keyPrefix);
  // Operations announced while a read was on its way: the announcement is at least as new as what the read returns.
  let announcedDuringRead: Set<string> | undefined;
  let subscribed = false;
  let closed = false;

  function apply(operation: string, override: BrownoutOverride | undefined, why: string): void {
    const before = JSON.stringify(board.override(operation));
    board.setOverride(operation, override);
    if (JSON.stringify(override) !== before) logger?.info({ operation, brownout: override ? toStored(override) : null, why }, 'brownout override changed');
  }

  async function resync(): Promise<void> {
    if (redis.status !== 'ready') return;
    const announced = new Set<string>();
    announcedDuringRead = announced;
    try {
      const overrides = await readBrownoutOverrides(redis, keyPrefix, board.operations);
      for (const [operation, override] of overrides) if (!announced.has(operation)) apply(operation, override, 'read from redis');
    } catch (error) {
      logger?.warn({ err: error }, 'could not read brownouts from redis: the last known state holds');
    } finally {
      if (announcedDuringRead === announced) announcedDuringRead = undefined;
    }
  }

  subscriber.on('message', (channel: string, message: string) => {
    if (channel !== events) return;
    let announcement: { operation?: unknown; override?: unknown };
    try {
      announcement = JSON.parse(message) as typeof announcement;
    } catch {
      announcement = {};
    }
    const override = announcement.override === null ? undefined : fromStored(announcement.override);
    if (typeof announcement.operation !== 'string' || (announcement.override !== null && !override)) {
      logger?.warn({ channel }, 'ignored a malformed brownout announcement');
      return;
    }
    announcedDuringRead?.add(announcement.operation);
    apply(announcement.operation, override, 'announced');
  });
  // The read's connection may come up after the subscription's: that is a reason to read too.
  const resyncOnReady = () => {
    if (subscribed) void resync();
  };
  redis.on('ready', resyncOnReady);
  const subscription = followChannel(subscriber, events, {
    retryMs: options.resyncMs,
    what: 'brownout announcements',
    ...(logger ? { logger } : {}),
    // Held again after a cut: what was announced meanwhile is lost; read now that nothing more is.
    onResubscribed: () => void resync(),
  });
  void subscription.held.then(() => {
    // `held` also settles when the follower closes first: its connections are being closed, nothing is to be read.
    if (closed) return;
    subscribed = true;
    return resync();
  });
  const timer = setInterval(() => void resync(), options.resyncMs);
  timer.unref();
  return {
    resync,
    close: () => {
      closed = true;
      subscription.close();
      clearInterval(timer);
      redis.off('ready', resyncOnReady);
    },
  };
}
