// Failed admin authentications per source (IPv4 address, IPv6 /64): a fixed window each, bounded counting, blocks never evicted, the injected clock.
import { describe, expect, it } from 'vitest';
import { createFailedAttempts, failureSource } from '../../../src/admin-api/failed-attempts.ts';
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

  it('forgets the oldest address below the limit past maxAddresses', () => {
    const { attempts } = limiter(2);
    for (let i = 0; i < 2; i++) attempts.fail('10.0.0.1');
    attempts.fail('10.0.0.2');
    attempts.fail('10.0.0.3');
    attempts.fail('10.0.0.1');
    expect(attempts.blockedFor('10.0.0.1')).toBe(0);
    expect(attempts.size()).toEqual({ counting: 2, blocked: 0 });
  });

  it('keeps a blocked address blocked whatever number of other addresses fail meanwhile', () => {
    const { clock, attempts } = limiter(100);
    for (let i = 0; i < 3; i++) attempts.fail('10.0.0.1');
    for (let i = 0; i < 10_050; i++) attempts.fail(`10.1.${i >> 8}.${i & 255}`);
    clock.set(1_000_000 + 59_999);
    expect(attempts.blockedFor('10.0.0.1')).toBe(1);
    expect(attempts.size()).toEqual({ counting: 100, blocked: 1 });
  });

  it('sweeps ended blocks and windows once a window has passed', () => {
    const { clock, attempts } = limiter();
    for (let i = 0; i < 3; i++) attempts.fail('10.0.0.1');
    attempts.fail('10.0.0.2');
    clock.set(1_000_000 + 60_000);
    attempts.fail('10.0.0.3');
    expect(attempts.size()).toEqual({ counting: 1, blocked: 0 });
  });

  it('counts every address of an IPv6 /64 as one source', () => {
    const { attempts } = limiter();
    attempts.fail('2001:db8:1:2::1');
    attempts.fail('2001:db8:1:2:ffff:ffff:ffff:ffff');
    attempts.fail('2001:0db8:0001:0002:abcd::9');
    expect(attempts.blockedFor('2001:db8:1:2::42')).toBe(60_000);
    expect(attempts.blockedFor('2001:db8:1:3::1')).toBe(0);
  });

  it('names sources by IPv4 address, by IPv6 /64, and an IPv4-mapped address as its IPv4 one', () => {
    expect([
      failureSource('192.0.2.7'),
      failureSource('::ffff:192.0.2.7'),
      failureSource('2001:db8::1'),
      failureSource('fe80::1%eth0'),
      failureSource('::1'),
      failureSource(''),
    ]).toEqual(['192.0.2.7', '192.0.2.7', '2001:db8:0:0::/64', 'fe80:0:0:0::/64', '0:0:0:0::/64', '']);
  });

  it('refuses a limit that is not a positive integer at construction', () => {
    expect(() => createFailedAttempts({ limit: 0, windowMs: 60_000, maxAddresses: 10, clock: fixedClock(0) })).toThrow(
      'createFailedAttempts: limit must be a positive integer, is 0',
    );
  });
});
