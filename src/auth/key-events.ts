// Key changes announced over Redis pub/sub, so every replica drops a revoked key from its cache at once.
import type { RedisClient } from '../redis/connect.ts';
import type { Logger } from 'pino';
import type { CachedKeyStore } from './cached-key-store.ts';
import { keyLayout, type KeyEvent } from './key-records.ts';

export async function publishKeyEvent(redis: RedisClient, keyPrefix: string, event: KeyEvent): Promise<void> {
  await redis.publish(keyLayout(keyPrefix).events, JSON.stringify(event));
}

function parseEvent(message: string): KeyEvent | undefined {
  try {
    const event = JSON.parse(message) as Partial<KeyEvent>;
    return typeof event.keyHash === 'string' && typeof event.type === 'string' ? (event as KeyEvent) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Evicts each announced key from the cache. ioredis re-subscribes by itself after a reconnect; events
 * published while the connection was down are lost, so the whole cache is dropped on every
 * re-subscription and records are read afresh.
 */
export async function followKeyEvents(subscriber: RedisClient, keyPrefix: string, cache: CachedKeyStore, logger?: Logger): Promise<void> {
  const channel = keyLayout(keyPrefix).events;
  let subscribedOnce = false;
  subscriber.on('message', (from: string, message: string) => {
    if (from !== channel) return;
    const event = parseEvent(message);
    if (event) cache.evict(event.keyHash);
    else logger?.warn({ channel }, 'ignored a malformed key event');
  });
  subscriber.on('ready', () => {
    if (!subscribedOnce) return;
    cache.clear();
    logger?.info({ channel }, 'key events re-subscribed: key cache cleared');
  });
  await subscriber.subscribe(channel);
  subscribedOnce = true;
}
