// One channel of a subscriber connection, owned by whoever follows it: subscribed until the subscription holds, and again
// after each reconnection.
//
// ioredis can re-subscribe by itself (`autoResubscribe`), but it sends that SUBSCRIBE without a handler on its promise: a
// connection closed while it was under way (a gateway closing just after Redis came back) was an unhandled rejection,
// "Connection is closed.". Fixed upstream (redis/ioredis#2187), not in 6.0.0. So createRedisClient turns it off
// (connect.ts) and each follower subscribes again here, its promise handled. A cluster's subscriber re-subscribes on its own,
// with its promises handled, and is left to do so.
import type { Logger } from 'pino';
import type { RedisClient } from './connect.ts';

/** The longest wait between two attempts to subscribe. */
const LONGEST_RETRY_MS = 30_000;

export interface ChannelSubscription {
  /** Settles once the channel was first subscribed to (or the subscription or its connection closed first); never rejects. */
  readonly held: Promise<void>;
  /** Stops subscribing again; the connection's owner closes the connection. */
  close(): void;
}

export interface ChannelSubscriptionOptions {
  /** The first wait after a failed attempt, doubled after each one. */
  retryMs: number;
  logger?: Logger;
  /** Said once when an attempt fails: what the channel carries ("key events"). */
  what: string;
  /**
   * Told each time the subscription holds again after a reconnection: what was published while it was away is lost, and from
   * now on nothing more is.
   */
  onResubscribed?: () => void;
}

export function followChannel(subscriber: RedisClient, channel: string, options: ChannelSubscriptionOptions): ChannelSubscription {
  let closed = false;
  let heldOnce = false;
  let markHeld!: () => void;
  const held = new Promise<void>((resolve) => {
    markHeld = resolve;
  });
  // A reconnection is a `ready` after one seen before: the first is the connection coming up, which sends the first SUBSCRIBE
  // (queued until then) by itself.
  let readyBefore = subscriber.status === 'ready';
  // Each reconnection starts the attempts afresh; an older run of attempts (still waiting to try again) stops, so failures
  // that last (an ACL refusing the channel) keep one run going, not one per reconnection.
  let run = 0;

  const subscribe = async (mine: number): Promise<void> => {
    for (let attempt = 0; !closed && mine === run; attempt++) {
      try {
        await subscriber.subscribe(channel);
        // A newer run (a reconnection meanwhile) sent its own SUBSCRIBE on the new connection, and reports it.
        if (mine !== run) return;
        if (heldOnce) options.onResubscribed?.();
        heldOnce = true;
        markHeld();
        return;
      } catch (error) {
        // Closed, or the connection was (it never reconnects then): nothing left to subscribe on.
        if (closed || subscriber.status === 'end') break;
        if (attempt === 0) options.logger?.error({ err: error, channel }, `could not subscribe to ${options.what}; trying again`);
        await new Promise((resolve) => setTimeout(resolve, Math.min(options.retryMs * 2 ** attempt, LONGEST_RETRY_MS)).unref());
      }
    }
    if (closed || subscriber.status === 'end') markHeld();
  };

  const onReady = () => {
    if (!readyBefore) {
      readyBefore = true;
      return;
    }
    // A cluster's subscriber re-subscribes by itself: its connection's `ready` is taken for the re-subscription, as before.
    if (subscriber.isCluster) {
      if (heldOnce) options.onResubscribed?.();
      return;
    }
    void subscribe(++run);
  };
  subscriber.on('ready', onReady);
  void subscribe(run);

  return {
    held,
    close() {
      closed = true;
      subscriber.off('ready', onReady);
      markHeld();
    },
  };
}
