// A subscriber's channel, followed through Redis restarts: subscribed again after each reconnection, and a connection
// closed while it subscribes again leaves no promise unhandled (ioredis's own re-subscription did: "Connection is closed.").
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient, type RedisClient } from '../../src/redis/connect.ts';
import { followChannel } from '../../src/redis/subscription.ts';
import { waitFor } from '../../support/start-gateway-process.ts';
import { startRedis, type PrivateRedis } from '../../support/start-redis.ts';
import { scaled } from '../../support/time-scale.ts';

const CHANNEL = 'subscription-test:events';
let redis: PrivateRedis;
let subscriber: RedisClient | undefined;
const unhandled: unknown[] = [];
const recordUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(async () => {
  redis = await startRedis();
  process.on('unhandledRejection', recordUnhandled);
});
afterEach(() => {
  subscriber?.disconnect();
  unhandled.length = 0;
});
afterAll(async () => {
  process.off('unhandledRejection', recordUnhandled);
  await redis?.stop();
});

function newSubscriber(url = redis.url): RedisClient {
  subscriber = createRedisClient(
    { url, sentinels: [], sentinelName: 'mymaster', clusterNodes: [], password: null, commandTimeoutMs: 500, connectTimeoutMs: 500 },
    { role: 'subscriber', name: 'subscription-test' },
  );
  return subscriber;
}

/**
 * A TCP proxy to Redis that can cut every connection, and hold back Redis's answers from a given moment.
 */
async function holdingProxy(redisPort: number) {
  const sockets = new Set<Socket>();
  let holding = false;
  const server = createServer((client) => {
    const upstream = connect(redisPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (!holding) client.write(chunk);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut: () => {
      for (const socket of sockets) socket.destroy();
    },
    holdAnswers: () => {
      holding = true;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Publishes until the subscriber has a message (a re-subscription is under way for a moment after the reconnection). */
async function delivered(client: RedisClient): Promise<string[]> {
  const messages: string[] = [];
  client.on('message', (channel: string, message: string) => {
    if (channel === CHANNEL) messages.push(message);
  });
  const published = async () => (await redis.client.publish(CHANNEL, 'after the restart').catch(() => 0)) === 1;
  await waitFor(published, 5000);
  await waitFor(async () => messages.length > 0, 2000);
  return messages;
}

describe('a followed channel', () => {
  it('is subscribed again after Redis restarts: a message published then reaches the follower', async () => {
    const client = newSubscriber();
    const subscription = followChannel(client, CHANNEL, { retryMs: 50, what: 'test events' });
    await subscription.held;
    await redis.restart();
    expect(await delivered(client)).toContain('after the restart');
    subscription.close();
  });

  it('closed with its connection while it subscribes again: no unhandled rejection', async () => {
    const proxy = await holdingProxy(redis.port);
    try {
      const client = newSubscriber(proxy.url);
      const subscription = followChannel(client, CHANNEL, { retryMs: 50, what: 'test events' });
      await subscription.held;
      // A cut; once the connection is back, Redis's answers are held, so the SUBSCRIBE sent again stays unanswered.
      const reconnected = once(client, 'ready').then(() => proxy.holdAnswers());
      proxy.cut();
      await reconnected;
      // As a gateway closes: its followers, then its connections.
      subscription.close();
      client.disconnect();
      await new Promise((resolve) => setTimeout(resolve, scaled(200)));
      expect(unhandled).toEqual([]);
    } finally {
      await proxy.close();
    }
  });
});

describe('a channel Redis refuses (an ACL without it)', () => {
  it('is tried by one run of attempts, however many reconnections came meanwhile', async () => {
    await redis.client.call('ACL', 'SETUSER', 'no-channels', 'on', '>no-channels-pass', '~*', 'resetchannels', '+@all');
    const client = newSubscriber(redis.url.replace('redis://', 'redis://no-channels:no-channels-pass@'));
    let attempts = 0;
    const subscribe = client.subscribe.bind(client);
    // A count of the SUBSCRIBEs the follower sends, each still sent to the real server.
    client.subscribe = ((...args: Parameters<typeof subscribe>) => {
      attempts++;
      return subscribe(...args);
    }) as typeof client.subscribe;
    await once(client, 'ready');
    const subscription = followChannel(client, CHANNEL, { retryMs: 100, what: 'test events' });
    try {
      for (let cut = 0; cut < 5; cut++) {
        const back = once(client, 'ready');
        client.disconnect(true);
        await back;
      }
      const after = attempts;
      const windowMs = scaled(1000);
      await new Promise((resolve) => setTimeout(resolve, windowMs));
      // One run waits 100, 200, 400, 800 ms... between attempts: k attempts take 100 × (2^k - 1) ms. Six runs, one per
      // connection, made 11 in a second.
      const oneRun = Math.floor(Math.log2(windowMs / 100 + 1));
      expect(attempts - after).toBeGreaterThan(0);
      expect(attempts - after).toBeLessThanOrEqual(oneRun);
    } finally {
      subscription.close();
    }
  });
});
