// Failed admin authentications per source address: a fixed window each, a bounded number of addresses, the injected clock.
import { describe, expect, it } from 'vitest';
import { createFailedAttempts } from '../../../src/admin-api/failed-attempts.ts';
import { fixedClock } from '../../../src/time/clock.ts';

function limiter(maxAddresses = 100) {
  const clock = fixedClock(1_000_000);
  return { clock, attempts: createFailedAttempts({ limit: 3, windowMs: 60_000, maxAddresses, clock }) };
}

describe('createFailedAttempts', () => {
  it('lets an address fail up to the limit, then blocks it until its window ends', () => {
    const { clock, attempts } = limiter();
    for (let i = 0; i < 3; i++) {
      expect(attempts.blockedFor('10.0.0.1')).toBe(0);
      attempts.fail('10.0.0.1');
    }
    clock.set(1_000_000 + 15_000);
    expect(attempts.blockedFor('10.0.0.1')).toBe(45_000);
    clock.set(1_000_000 + 60_000);
    expect(attempts.blockedFor('10.0.0.1')).toBe(0);
  });

  it('counts each address apart', () => {
    const { attempts } = limiter();
    for (let i = 0; i < 3; i++) attempts.fail('10.0.0.1');
    expect(attempts.blockedFor('10.0.0.2')).toBe(0);
  });

  it('starts a new window after the last one ended', () => {
    const { clock, attempts } = limiter();
    attempts.fail('10.0.0.1');
    attempts.fail('10.0.0.1');
    clock.set(1_000_000 + 60_000);
    attempts.fail('10.0.0.1');
    attempts.fail('10.0.0.1');
    expect(attempts.blockedFor('10.0.0.1')).toBe(0);
  });

  it('forgets the oldest address past maxAddresses', () => {
    const { attempts } = limiter(2);
    for (let i = 0; i < 3; i++) attempts.fail('10.0.0.1');
    attempts.fail('10.0.0.2');
    attempts.fail('10.0.0.3');
    expect(attempts.blockedFor('10.0.0.1')).toBe(0);
  });

  it('refuses a limit that is not a positive integer at construction', () => {
    expect(() => createFailedAttempts({ limit: 0, windowMs: 60_000, maxAddresses: 10, clock: fixedClock(0) })).toThrow(
      'createFailedAttempts: limit must be a positive integer, is 0',
    );
  });
});
