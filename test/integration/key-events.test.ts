// Key changes reach a replica's key cache: announced at once, and, when an announcement is lost, by the
// epoch that every change moves (an event that skips a number, or the periodic check).
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CachedKeyStore } from '../../src/auth/cached-key-store.ts';
import { KeyAdmin } from '../../src/auth/key-admin.ts';
import { followKeyEvents, type KeyCacheClearReason, type KeyEvents } from '../../src/auth/key-events.ts';
import { createKeyHasher } from '../../src/auth/key-hash.ts';
import { keyLayout, toHashFields } from '../../src/auth/key-records.ts';
import { RedisKeyStore } from '../../src/auth/redis-key-store.ts';
import type { RedisClient } from '../../src/redis/connect.ts';
import { createRedisClient } from '../../src/redis/connect.ts';
import { systemClock } from '../../src/time/clock.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { requestPathClient, startRedis, type PrivateRedis } from '../../support/start-redis.ts';

const PREFIX = 'key-events-test:';
const hashKey = createKeyHasher('key-events-test-pepper-01');
let redis: PrivateRedis;
let commands: RedisClient;
let subscriber: RedisClient;
let admin: KeyAdmin;
let following: KeyEvents | undefined;
/** Why the replica of the test dropped its whole cache, in order (the key cache clears metric). */
let clears: KeyCacheClearReason[] = [];

beforeAll(async () => {
  redis = await startRedis();
  commands = await requestPathClient(redis.url, 'key-events-test');
  admin = new KeyAdmin(commands, { keyPrefix: PREFIX, hashKey, clock: systemClock });
});
afterEach(() => {
  following?.close();
  subscriber?.disconnect();
});
afterAll(async () => {
  commands.disconnect();
  await redis.stop();
});

/**
 * A replica's key cache (entries kept a minute: only an event or the epoch removes them here), following the
 * events; with `subscribeTo` another server's URL, a subscription that never succeeds.
 */
async function replicaCache(checkMs: number, subscribeTo = redis.url): Promise<CachedKeyStore> {
  const cache = new CachedKeyStore(new RedisKeyStore(commands, PREFIX), { maxEntries: 100, ttlMs: 60_000, negativeTtlMs: 60_000, clock: systemClock });
  subscriber = createRedisClient(
    { url: subscribeTo, sentinels: [], sentinelName: 'mymaster', clusterNodes: [], password: null, commandTimeoutMs: 500, connectTimeoutMs: 500 },
    { role: 'subscriber', name: 'key-events-test-events' },
  );
  clears = [];
  following = followKeyEvents({ subscriber, redis: commands, keyPrefix: PREFIX, cache, checkMs, onCacheCleared: (reason) => clears.push(reason) });
  if (subscribeTo === redis.url) await following.subscribed;
  return cache;
}

async function cachedKey(cache: CachedKeyStore): Promise<{ id: string; keyHash: string }> {
  const { key, record } = await admin.create({ consumer: 'acme', environments: ['production'] });
  const keyHash = hashKey(key);
  expect((await cache.findByHash(keyHash))?.revoked).toBe(false);
  return { id: record.id, keyHash };
}

/** A revocation as the admin writes it (the record and the epoch, one transaction) whose announcement never arrives. */
async function revokeUnannounced(keyHash: string): Promise<void> {
  const record = await new RedisKeyStore(commands, PREFIX).findByHash(keyHash);
  const layout = keyLayout(PREFIX);
  await commands
    .multi()
    .hset(layout.record(keyHash), toHashFields({ ...record!, revoked: true }))
    .incr(layout.eventsEpoch)
    .exec();
}

describe('key events', () => {
  it('evict a revoked key from the cache as soon as its revocation is announced', async () => {
    const cache = await replicaCache(60_000);
    const { id, keyHash } = await cachedKey(cache);
    await admin.revoke(id);
    await waitFor(async () => (await cache.findByHash(keyHash))?.revoked === true, 1000, 5);
  });

  it('number each change: the epoch in Redis moves with it and the announcement carries it', async () => {
    const cache = await replicaCache(60_000);
    const { id } = await cachedKey(cache);
    const before = Number((await commands.get(keyLayout(PREFIX).eventsEpoch)) ?? 0);
    const listener = createRedisClient(
      { url: redis.url, sentinels: [], sentinelName: 'mymaster', clusterNodes: [], password: null, commandTimeoutMs: 500, connectTimeoutMs: 500 },
      { role: 'subscriber', name: 'key-events-test-listener' },
    );
    const announced = new Promise<string>((resolve) => listener.on('message', (_channel: string, message: string) => resolve(message)));
    await listener.subscribe(keyLayout(PREFIX).events);
    await admin.setRateLimit(id, 100);
    expect(JSON.parse(await announced)).toMatchObject({ type: 'changed', epoch: before + 1 });
    expect(Number(await commands.get(keyLayout(PREFIX).eventsEpoch))).toBe(before + 1);
    listener.disconnect();
  });

  it('drop the cache when the epoch check finds a change whose announcement was lost', async () => {
    const cache = await replicaCache(100);
    const { keyHash } = await cachedKey(cache);
    // Cached for 30 s: only the check, every 100 ms here, can tell the cache in time.
    await revokeUnannounced(keyHash);
    await waitFor(async () => (await cache.findByHash(keyHash))?.revoked === true, 2000, 10);
    // A check that read the epoch of the key's creation before its announcement arrived clears needlessly
    // (epoch_ahead too): only the first and the last clear are certain.
    expect(clears[0]).toBe('baseline');
    expect(clears.at(-1)).toBe('epoch_ahead');
  });

  it('reach the cache by the epoch check while the subscription cannot be made', async () => {
    const cache = await replicaCache(100, 'redis://127.0.0.1:1');
    await sleep(150); // the first check has read the epoch
    const { keyHash } = await cachedKey(cache);
    await revokeUnannounced(keyHash);
    await waitFor(async () => (await cache.findByHash(keyHash))?.revoked === true, 2000, 10);
  });

  it('drop the cache when the epoch in Redis went back (Redis lost writes), and count on from there', async () => {
    const layout = keyLayout(PREFIX);
    await commands.set(layout.eventsEpoch, '10');
    const cache = await replicaCache(100);
    await sleep(150); // the first check has read the epoch
    const { keyHash } = await cachedKey(cache);
    // As a failover that lost the last writes would leave it: the record changed, the epoch behind.
    const record = await new RedisKeyStore(commands, PREFIX).findByHash(keyHash);
    await commands
      .multi()
      .hset(layout.record(keyHash), toHashFields({ ...record!, revoked: true }))
      .set(layout.eventsEpoch, '9')
      .exec();
    await waitFor(async () => (await cache.findByHash(keyHash))?.revoked === true, 2000, 10);
    // As above, the key's creation may have cleared needlessly in between.
    expect(clears[0]).toBe('baseline');
    expect(clears.at(-1)).toBe('epoch_back');
  });

  it('drop the cache when an announcement skips a number, without waiting for the check', async () => {
    const cache = await replicaCache(60_000);
    const lost = await cachedKey(cache);
    const other = await cachedKey(cache);
    await revokeUnannounced(lost.keyHash);
    await admin.revoke(other.id);
    await waitFor(async () => (await cache.findByHash(lost.keyHash))?.revoked === true, 1000, 5);
    expect(clears).toEqual(['baseline', 'event_skipped']);
  });

  it('reach the cache by the epoch check when a rotation that revoked the key could not announce it', async () => {
    // A real refusal of PUBLISH on an otherwise working connection: an ACL user without the command.
    await redis.client.call('ACL', 'SETUSER', 'no-publish', 'on', '>no-publish-password', '~*', '&*', '+@all', '-publish');
    const unannounced = await requestPathClient(`redis://no-publish:no-publish-password@127.0.0.1:${redis.port}`, 'key-events-test-no-publish');
    const failures: Array<{ keyId: string; error: unknown }> = [];
    const rotator = new KeyAdmin(unannounced, {
      keyPrefix: PREFIX,
      hashKey,
      clock: systemClock,
      onAnnouncementFailed: (keyId, error) => failures.push({ keyId, error }),
    });
    const cache = await replicaCache(100);
    const { id, keyHash } = await cachedKey(cache);
    await rotator.rotate(id);
    unannounced.disconnect();
    await waitFor(async () => (await cache.findByHash(keyHash))?.revoked === true, 2000, 10);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.keyId).toBe(id);
    expect(String(failures[0]!.error)).toMatch(/^ReplyError: NOPERM .*'publish'/);
  });

  it('drop the cache when the subscription comes back after a cut: what was announced meanwhile is lost', async () => {
    const cache = await replicaCache(60_000);
    const { keyHash } = await cachedKey(cache);
    await revokeUnannounced(keyHash);
    // The connection cut and made again: ioredis subscribes anew, and says so.
    subscriber.disconnect(true);
    await waitFor(async () => (await cache.findByHash(keyHash))?.revoked === true, 2000, 10);
    expect(clears).toEqual(['baseline', 'resubscribed']);
  });

  it('are heard again once the subscription is back after a cut: a later revocation is evicted at once', async () => {
    const cache = await replicaCache(60_000);
    const back = once(subscriber, 'ready');
    subscriber.disconnect(true);
    await back;
    const channel = keyLayout(PREFIX).events;
    const subscribers = async () => ((await commands.pubsub('NUMSUB', channel)) as [string, number])[1];
    await waitFor(async () => (await subscribers()) === 1, 2000, 10);
    // Cached after the cut: only an announcement can evict it within a second (the epoch is read once a minute here).
    const { id, keyHash } = await cachedKey(cache);
    await admin.revoke(id);
    await waitFor(async () => (await cache.findByHash(keyHash))?.revoked === true, 1000, 5);
  });
});
