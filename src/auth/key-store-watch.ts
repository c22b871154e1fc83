// Notices the key store emptied under a running gateway (Redis restarted without persistence, a FLUSHALL): every key then answers 401.
import type { Logger } from 'pino';
import type { RedisClient } from '../redis/connect.ts';
import { keyLayout } from './key-records.ts';

/** Where the restore is described; named in the log line so whoever reads it knows what to do. */
export const KEY_STORE_EMPTIED_RUNBOOK = 'docs/operations.md#runbook-petstoregatewaykeystoreemptied';

export interface KeyStoreWatchOptions {
  keyPrefix: string;
  logger: Logger;
  /** How often the key count is read (one SCARD and one EXISTS, off the request path). */
  checkMs: number;
  /** Told the count at every answer (the `key_store_keys` gauge). */
  onChecked?: (keys: number) => void;
  /** Told once per emptying seen (the `key_store_emptied_total` counter). */
  onEmptied?: () => void;
  /** Timers, injectable so tests drive checks themselves; setInterval by default. */
  every?: (ms: number, run: () => void) => { stop(): void };
}

export interface KeyStoreWatch {
  /** One check now (what the timer runs); resolves when it is done, failures included (Redis away is said elsewhere). */
  check(): Promise<void>;
  close(): void;
}

function intervalTimer(ms: number, run: () => void): { stop(): void } {
  const timer = setInterval(run, ms);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * "Emptied" is only said after this process saw keys: a new deployment's empty Redis is not an incident. It is said
 * once per emptying; keys coming back (an import) arm it again. Keys are never deleted one by one (revoking keeps the
 * record), so a count going to zero can only be the store itself lost.
 */
export function watchKeyStore(redis: RedisClient, options: KeyStoreWatchOptions): KeyStoreWatch {
  const layout = keyLayout(options.keyPrefix);
  let sawKeys = false;
  let pending: Promise<void> | undefined;

  const read = async () => {
    const replies = (await redis.pipeline().scard(layout.ids).exists(layout.pepperFingerprint).exec()) ?? [];
    const [count, fingerprint] = [0, 1].map((index) => {
      const [error, reply] = replies[index] ?? [new Error('the key count was not read (pipeline discarded)')];
      if (error) throw error;
      return reply as number;
    }) as [number, number];
    options.onChecked?.(count);
    if (count > 0) {
      sawKeys = true;
      return;
    }
    if (!sawKeys) return;
    sawKeys = false;
    options.onEmptied?.();
    options.logger.error(
      { keyPrefix: options.keyPrefix, pepperFingerprintKept: fingerprint === 1, runbook: KEY_STORE_EMPTIED_RUNBOOK },
      `key store emptied: Redis holds no API key under the prefix "${options.keyPrefix}" any more (it held some before${
        fingerprint === 1 ? '' : '; the pepper fingerprint is gone too'
      }): every key is refused 401 until the keys are restored (npm run keys -- import FILE), see ${KEY_STORE_EMPTIED_RUNBOOK}`,
    );
  };

  const check = () => {
    // Single flight: a slow Redis does not pile up checks.
    pending ??= read()
      .catch(() => undefined) // Redis away: the request-path connection says so; the next check reads again
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };

  const timer = (options.every ?? intervalTimer)(options.checkMs, () => void check());
  void check();
  return { check, close: () => timer.stop() };
}
