// Key changes announced over Redis pub/sub, so every replica drops a revoked key at once, and numbered, so one that lost an announcement drops its cache.
import type { Logger } from 'pino';
import type { RedisClient } from '../redis/connect.ts';
import { followChannel } from '../redis/subscription.ts';
import type { CachedKeyStore } from './cached-key-store.ts';
import { keyLayout, type KeyEvent } from './key-records.ts';

/** Announces a change whose epoch the caller has already moved (with the record, in one transaction). */
export async function publishKeyEvent(redis: RedisClient, keyPrefix: string, event: KeyEvent): Promise<void> {
  await redis.publish(keyLayout(keyPrefix).events, JSON.stringify(event));
}

function parseEvent(message: string): KeyEvent | undefined {
  try {
    const event = JSON.parse(message) as Partial<KeyEvent>;
    if (typeof event.keyHash !== 'string' || typeof event.type !== 'string') return undefined;
    if (event.epoch !== undefined && !Number.isSafeInteger(event.epoch)) return undefined;
    return event as KeyEvent;
  } catch {
    return undefined;
  }
}

export interface KeyEventsOptions {
  /** The subscription's connection (in subscriber mode, it can run no other command). */
  subscriber: RedisClient;
  /** A connection for the epoch check. */
  redis: RedisClient;
  keyPrefix: string;
  cache: CachedKeyStore;
  /** How often the epoch is read: the longest a lost announcement leaves a changed key in the cache. */
  checkMs: number;
  logger?: Logger;
  /** Told each time the whole cache is dropped, and why (the key cache clears metric). */
  onCacheCleared?: (reason: KeyCacheClearReason) => void;
}

/**
 * Why the whole key cache was dropped: `baseline` (first epoch read after start), `resubscribed` (after a cut),
 * `event_skipped`, `epoch_ahead` (the subscription is losing events), `epoch_back` (Redis lost writes).
 */
export type KeyCacheClearReason = 'baseline' | 'resubscribed' | 'event_skipped' | 'epoch_ahead' | 'epoch_back';

export interface KeyEvents {
  /** Settles once subscribed (the gateway starts without waiting for it: Redis may be away). */
  readonly subscribed: Promise<void>;
  close(): void;
}

/**
 * Evicts each announced key, and drops the whole cache when an announcement was missed:
 * - the subscription is made again after a reconnect (subscription.ts), losing what was published meanwhile: dropped then;
 * - a connection a middlebox silently dropped loses events unnoticed. Each change moves an epoch in Redis and carries
 *   it: an event that skips a number, or an epoch (one GET every `checkMs`, off the request path) ahead of or behind
 *   the last event, drops the cache, and a subscription that then does not answer a ping is reconnected.
 * A needless drop (the epoch read just before its event arrived) costs each key one more lookup.
 */
export function followKeyEvents(options: KeyEventsOptions): KeyEvents {
  const { subscriber, redis, cache, logger, checkMs, onCacheCleared } = options;
  const layout = keyLayout(options.keyPrefix);
  const channel = layout.events;
  /** The newest epoch known to be reflected in the cache; undefined until the first read. */
  let seen: number | undefined;
  let subscribedOnce = false;
  let closed = false;
  const clear = (reason: KeyCacheClearReason) => {
    cache.clear();
    onCacheCleared?.(reason);
  };
  const missed = (epoch: number, reason: KeyCacheClearReason, how: string) => {
    clear(reason);
    logger?.warn({ channel, epoch, lastEventEpoch: seen }, `key events: ${how}; key cache cleared`);
  };
  subscriber.on('message', (from: string, message: string) => {
    if (from !== channel) return;
    const event = parseEvent(message);
    if (event === undefined) {
      logger?.warn({ channel }, 'ignored a malformed key event');
      return;
    }
    cache.evict(event.keyHash);
    // Before the baseline (which clears the cache) an event's number says nothing of what was missed before it.
    if (event.epoch === undefined || seen === undefined) return;
    if (event.epoch > seen + 1) missed(event.epoch, 'event_skipped', 'an event skipped a number (one was lost)');
    seen = Math.max(seen, event.epoch);
  });
  // Also while there is no subscription (not yet, or it failed): then every change is seen here.
  const check = async () => {
    const raw = await redis.get(layout.eventsEpoch);
    const stored = raw === null ? 0 : Number(raw);
    if (!Number.isSafeInteger(stored) || stored < 0) {
      logger?.warn({ key: layout.eventsEpoch }, 'key events: the epoch in Redis is not a count; ignored');
      return;
    }
    if (seen === undefined) {
      // The baseline: anything cached before it may have changed unannounced (at start-up the cache is all but empty).
      clear('baseline');
    } else if (stored > seen) {
      missed(stored, 'epoch_ahead', 'the epoch in Redis is ahead of the last event received');
      void repairSubscription();
    } else if (stored < seen) {
      // Redis lost writes (a failover, a restore, another server): what was cached may predate a change.
      missed(stored, 'epoch_back', 'the epoch in Redis went back');
    }
    seen = stored;
  };
  // A missed announcement: the connection may be dead unknowingly (nothing is written on it); an unanswered ping reconnects it.
  let repairing = false;
  const repairSubscription = async () => {
    if (!subscribedOnce || repairing || closed || subscriber.isCluster || subscriber.status !== 'ready') return;
    repairing = true;
    try {
      await subscriber.ping();
    } catch {
      logger?.warn({ channel }, 'key events: the subscription did not answer a ping; reconnecting');
      subscriber.disconnect(true);
    } finally {
      repairing = false;
    }
  };
  const timer = setInterval(() => {
    check().catch(() => undefined); // Redis away: nothing can change a key meanwhile; the next check reads it
  }, checkMs);
  timer.unref();
  void check().catch(() => undefined);
  // Subscribing can fail (Redis away, or too slow to answer at start-up); it is tried again until it holds, and again after
  // each reconnection. Nothing to clear when it first holds: a change this replica was not subscribed for moved the epoch,
  // which the check reads.
  const subscription = followChannel(subscriber, channel, {
    retryMs: checkMs,
    what: 'key events',
    ...(logger ? { logger } : {}),
    // Held again after a cut: what was announced meanwhile is lost, so whatever is cached may predate a change.
    onResubscribed: () => {
      clear('resubscribed');
      logger?.info({ channel }, 'key events re-subscribed: key cache cleared');
    },
  });
  void subscription.held.then(() => {
    subscribedOnce = true;
  });
  return {
    subscribed: subscription.held,
    close: () => {
      closed = true;
      subscription.close();
      clearInterval(timer);
    },
  };
}
