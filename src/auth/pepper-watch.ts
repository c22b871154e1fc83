// The gateway's half of the pepper fingerprint: not ready until its pepper is verified against the keys', checked again whenever Redis comes back.
import type { Logger } from 'pino';
import type { ReadinessCheck } from '../admin/admin-app.ts';
import type { RedisClient } from '../redis/connect.ts';
import { claimPepperFingerprint, describePepperMismatch } from './pepper-fingerprint.ts';

export interface PepperWatchOptions {
  keyPrefix: string;
  /** This gateway's (`PepperedKeyHasher.pepperFingerprint`). */
  fingerprint: string;
  logger: Logger;
  /** While not verified (Redis away, or a mismatch an operator may fix in Redis), asked again this often. */
  retryMs: number;
}

export interface PepperWatch {
  /** Critical: with another pepper than the keys', every valid key would be refused 401. */
  readiness: ReadinessCheck;
  close(): void;
}

type PepperState = 'unverified' | 'verified' | 'differs';

/**
 * Verified once, the pepper stays verified while Redis is away: an outage must not take the replica out
 * of the load balancer (README, Health and shutdown). When Redis comes back it may be another, or
 * emptied, Redis, so it is checked again.
 */
export function watchPepper(redis: RedisClient, options: PepperWatchOptions): PepperWatch {
  const { keyPrefix, fingerprint, logger } = options;
  let state: PepperState = 'unverified';
  let pending: Promise<void> | undefined;

  const verify = () =>
    (pending ??= claimPepperFingerprint(redis, keyPrefix, fingerprint)
      .then(
        (claim) => {
          if (claim.outcome === 'differs') {
            // One line per change of state, not per retry: the setting is named once, where the operator looks.
            if (state !== 'differs') logger.error({ setting: 'API_KEY_PEPPER_FILE / API_KEY_PEPPER' }, `not ready: ${describePepperMismatch(claim.stored, fingerprint)}`);
            state = 'differs';
            return;
          }
          if (claim.outcome === 'recorded') {
            if (claim.existingKeys > 0) {
              logger.warn({ existingKeys: claim.existingKeys }, 'keys in Redis had no pepper fingerprint (written before fingerprints existed): recorded this gateway\'s, assuming they were made with its pepper');
            } else logger.info('recorded the pepper fingerprint in Redis: keys written with another pepper will be refused');
          }
          if (state === 'differs') logger.info('the pepper now matches the keys\' pepper: ready');
          state = 'verified';
        },
        // Redis away or failing: the state stays as it was; the retry or the next reconnection asks again.
        () => undefined,
      )
      .finally(() => (pending = undefined)));

  const onReady = () => void verify();
  redis.on('ready', onReady);
  if (redis.status === 'ready') onReady();
  const retry = setInterval(() => {
    if (state !== 'verified') void verify();
  }, options.retryMs);
  retry.unref();

  return {
    readiness: { name: 'pepper', critical: true, check: async () => state === 'verified' },
    close() {
      clearInterval(retry);
      redis.off('ready', onReady);
    },
  };
}
