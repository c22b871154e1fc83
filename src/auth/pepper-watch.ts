// The gateway's half of the pepper fingerprint: not ready until its pepper is verified against the keys', and loud whenever Redis says otherwise.
import type { Logger } from 'pino';
import type { ReadinessCheck } from '../admin/admin-app.ts';
import type { RedisClient } from '../redis/connect.ts';
import { claimPepperFingerprint, describePepperMismatch, NO_PEPPER, readPepperFingerprint } from './pepper-fingerprint.ts';

export interface PepperWatchOptions {
  keyPrefix: string;
  /** This gateway's (`PepperedKeyHasher.pepperFingerprint`). */
  fingerprint: string;
  logger: Logger;
  /** While not verified (Redis away, or a mismatch an operator may fix in Redis), asked again this often. */
  retryMs: number;
  /** Once verified, asked again this often, so that a fingerprint changed in Redis is reported soon after. */
  recheckMs: number;
  /** Told whether Redis's fingerprint matches this gateway's pepper, at every answer (a gauge). */
  onChecked?: (matches: boolean) => void;
}

export interface PepperWatch {
  /** Critical: with another pepper than the keys', every valid key would be refused 401. */
  readiness: ReadinessCheck;
  close(): void;
}

type PepperState = 'unverified' | 'verified' | 'differs';

/**
 * Not ready until verified once, then ready whatever it hears: its pepper cannot change, so a later mismatch was made
 * in Redis (a flush, a stray writer), and taking every replica out would be an outage. It is logged and paged instead.
 */
export function watchPepper(redis: RedisClient, options: PepperWatchOptions): PepperWatch {
  const { keyPrefix, fingerprint, logger } = options;
  let state: PepperState = 'unverified';
  /** What the last answer said, so each change is logged once, not each retry. */
  let heard: 'matches' | 'differs' | undefined;
  let lastError: string | undefined;
  let pending: Promise<void> | undefined;
  let again = false;

  function answered(matches: boolean, stored?: string): void {
    options.onChecked?.(matches);
    lastError = undefined;
    if (!matches) {
      if (heard !== 'differs') {
        const where = state === 'verified' ? "the keys' pepper fingerprint in Redis changed after this replica verified it (it stays ready)" : 'not ready';
        logger.error({ setting: 'API_KEY_PEPPER_FILE / API_KEY_PEPPER' }, `${where}: ${describePepperMismatch(stored!, fingerprint)}`);
      }
      heard = 'differs';
      if (state !== 'verified') state = 'differs';
      return;
    }
    if (heard === 'differs') logger.info("the pepper matches the keys' pepper again");
    heard = 'matches';
    state = 'verified';
  }

  const check = async () => {
    // A gateway never claims an empty Redis (the first key written does, through the CLI), nor any Redis for
    // "no pepper": a stray unpeppered process must not lock out the keys and every peppered replica.
    if (fingerprint === NO_PEPPER) {
      const stored = await readPepperFingerprint(redis, keyPrefix);
      return stored === null ? answered(true) : answered(stored === fingerprint, stored);
    }
    const claim = await claimPepperFingerprint(redis, keyPrefix, fingerprint, true);
    if (claim.outcome === 'differs') return answered(false, claim.stored);
    if (claim.outcome === 'recorded') {
      logger.warn(
        { existingKeys: claim.existingKeys },
        "keys in Redis had no pepper fingerprint (written before fingerprints existed): recorded this gateway's, assuming they were made with its pepper",
      );
    }
    answered(true);
  };

  function verify(): Promise<void> {
    if (pending) {
      // A reconnection during a check on the old connection: that check may fail; check once more after it.
      again = true;
      return pending;
    }
    pending = check()
      .catch((error: unknown) => {
        // Redis away or refusing (read-only replica, out of memory, ACL): said once per distinct reason.
        const reason = error instanceof Error ? error.message : String(error);
        if (reason !== lastError) logger.warn({ reason }, `the pepper fingerprint could not be checked in Redis: ${reason}`);
        lastError = reason;
      })
      .finally(() => {
        pending = undefined;
        if (again) {
          again = false;
          void verify();
        }
      });
    return pending;
  }

  const onReady = () => void verify();
  redis.on('ready', onReady);
  if (redis.status === 'ready') onReady();
  const retry = setInterval(() => {
    if (state !== 'verified') void verify();
  }, options.retryMs);
  const recheck = setInterval(() => {
    if (state === 'verified') void verify();
  }, options.recheckMs);
  retry.unref();
  recheck.unref();

  return {
    readiness: { name: 'pepper', critical: true, check: async () => state === 'verified' },
    close() {
      clearInterval(retry);
      clearInterval(recheck);
      redis.off('ready', onReady);
    },
  };
}
