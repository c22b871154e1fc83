// The channel between the rate-limit stage and its store through express-rate-limit (engaged): fails when the
// library stops carrying a spec to the store in the key's turn, or the store's reading back to the request.
import express from 'express';
import { type ClientRateLimitInfo, rateLimit, type RateLimitInfo, type Store } from 'express-rate-limit';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { QuotaDesk, quotaReadingOf, windowEndWithQuota } from '../../../src/limits/limiter-channel.ts';
import type { QuotaSpec } from '../../../src/limits/quota-count.ts';
import type { QuotaReading } from '../../../src/limits/quota-periods.ts';

/** Answers each increment with the spec it found on the desk, as a reading of its own. */
class SpecEchoStore implements Store {
  readonly quotas = new QuotaDesk();
  readonly seen: Array<QuotaSpec | undefined> = [];

  increment(key: string): ClientRateLimitInfo {
    const spec = this.quotas.specFor(key);
    this.seen.push(spec);
    const reading: QuotaReading = spec?.perDay === undefined ? {} : { day: { limit: spec.perDay, used: this.seen.length, endsAt: 0 } };
    return { totalHits: this.seen.length, resetTime: windowEndWithQuota(Date.now() + 60_000, reading) };
  }

  decrement(): void {}
  resetKey(): void {}
}

/** An app whose limiter leaves each request's spec (from its `x-quota` header) under its key, as the gateway's stage does. */
function appOver(store: SpecEchoStore) {
  const app = express();
  app.use(
    rateLimit({
      windowMs: 60_000,
      limit: 100,
      store,
      validate: false,
      standardHeaders: false,
      legacyHeaders: false,
      keyGenerator: (req) => {
        const key = `key_${String(req.headers['x-key'])}:listPets`;
        store.quotas.leave(key, { keyId: String(req.headers['x-key']), windowLimit: 100, perDay: Number(req.headers['x-quota']) });
        return key;
      },
    }),
  );
  app.get('/', (req, res) => {
    res.json(quotaReadingOf((req as typeof req & { rateLimit: RateLimitInfo }).rateLimit) ?? null);
  });
  return app;
}

describe('the quota channel through express-rate-limit (engaged)', () => {
  it('hands the store the spec left under the key its increment is asked for', async () => {
    const store = new SpecEchoStore();
    await request(appOver(store)).get('/').set('x-key', 'a').set('x-quota', '7');
    expect(store.seen).toEqual([{ keyId: 'a', windowLimit: 100, perDay: 7 }]);
  });

  it('brings each request the reading its store answered it with, concurrent requests included', async () => {
    const store = new SpecEchoStore();
    const app = appOver(store);
    const answers = await Promise.all([1, 2, 3].map((quota) => request(app).get('/').set('x-key', `k${quota}`).set('x-quota', String(quota))));
    for (const [index, answer] of answers.entries()) expect(answer.body.day.limit).toBe(index + 1);
  });

  it('reads no reading from a count answered without one', () => {
    expect(quotaReadingOf({ limit: 1, used: 1, remaining: 0, resetTime: new Date(), key: 'k' })).toBeUndefined();
    expect(quotaReadingOf(undefined)).toBeUndefined();
  });
});

describe('the quota desk', () => {
  it('gives nothing for a key no spec was left under', () => {
    expect(new QuotaDesk().specFor('key_a:listPets')).toBeUndefined();
  });

  it('gives nothing once a key without quotas came by (its quotas removed)', () => {
    const desk = new QuotaDesk();
    desk.leave('key_a:listPets', { keyId: 'key_a', windowLimit: 10, perDay: 1 });
    desk.leave('key_a:listPets', undefined);
    expect(desk.specFor('key_a:listPets')).toBeUndefined();
  });

  it('gives the latest spec left under a key', () => {
    const desk = new QuotaDesk();
    desk.leave('key_a:listPets', { keyId: 'key_a', windowLimit: 10, perDay: 1 });
    desk.leave('key_a:listPets', { keyId: 'key_a', windowLimit: 10, perDay: 2 });
    expect(desk.specFor('key_a:listPets')).toEqual({ keyId: 'key_a', windowLimit: 10, perDay: 2 });
  });
});
