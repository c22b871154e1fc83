// RateLimitFields writes what express-rate-limit's `standardHeaders: 'draft-8'` writes, byte for byte: the library,
// counting the same hits for the same key, is the oracle.
import type { NextFunction, Request, Response } from 'express';
import { type ClientRateLimitInfo, type RateLimitInfo, rateLimit, type Store } from 'express-rate-limit';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RateLimitFields, type WindowCount } from '../../../src/forks/rate-limit-fields.ts';

const NOW = Date.UTC(2026, 10, 24, 12, 0, 0, 250);

/** A store that answers the hits and reset time it is given. */
class GivenStore implements Store {
  readonly answer: ClientRateLimitInfo;
  constructor(answer: ClientRateLimitInfo) {
    this.answer = answer;
  }
  increment(): Promise<ClientRateLimitInfo> {
    return Promise.resolve(this.answer);
  }
  decrement(): void {}
  resetKey(): void {}
}

/** A response that keeps the fields set on it, in order, as Express's setHeader and append set them. */
function fieldsResponse() {
  const fields: Array<[string, string]> = [];
  const res = {
    headersSent: false,
    locals: {},
    setHeader(name: string, value: string) {
      fields.push([name, value]);
      return res;
    },
    append(name: string, value: string) {
      fields.push([name, value]);
      return res;
    },
  };
  return { res: res as unknown as Response, fields };
}

/** What the library writes for `hits` of `limit` on `key`, and the info it counted. */
async function libraryFields(key: string, name: string, limit: number, windowMs: number, answer: ClientRateLimitInfo) {
  const limiter = rateLimit({
    windowMs,
    limit,
    keyGenerator: () => key,
    identifier: () => name,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    validate: false,
    store: new GivenStore(answer),
    handler: (_req, _res, next) => next(),
  });
  const req = {} as Request & { rateLimit?: RateLimitInfo };
  const { res, fields } = fieldsResponse();
  await new Promise<void>((resolve) => void limiter(req, res, (() => resolve()) as NextFunction));
  return { fields, info: req.rateLimit! };
}

/** The gateway's count of what the library counted: the same numbers, the reset as ms. */
const countOf = (info: RateLimitInfo): WindowCount => ({ key: info.key, limit: info.limit, remaining: info.remaining, resetsAt: info.resetTime?.getTime() });

function ourFields(info: RateLimitInfo, name: string, windowMs: number, refused: boolean, writer = new RateLimitFields(windowMs)) {
  const { res, fields } = fieldsResponse();
  // The library reckons the reset against Date.now() (faked to NOW): the gateway against the instant it is given.
  writer.write(res, countOf(info), name, Date.now());
  if (refused) writer.writeRetryAfter(res, countOf(info), Date.now());
  return fields;
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(NOW);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('the RateLimit fields', () => {
  it('are the library’s draft-8 fields for any key, quota, window, count and reset time', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,20}$/),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 3_600_000 }),
        fc.integer({ min: 1, max: 2_000_000 }),
        fc.option(fc.integer({ min: -120_000, max: 3_600_000 }), { nil: undefined }),
        async (key, name, limit, windowMs, hits, resetInMs) => {
          const answer = { totalHits: hits, resetTime: resetInMs === undefined ? undefined : new Date(NOW + resetInMs) };
          const { fields, info } = await libraryFields(key, name, limit, windowMs, answer);
          // The library writes Retry-After on a refusal only, after the two fields.
          expect(ourFields(info, name, windowMs, hits > limit)).toEqual(fields);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('are the same when a key’s partition key is remembered as when it is first hashed', async () => {
    const writer = new RateLimitFields(60_000);
    const { fields, info } = await libraryFields('key_a:listPets', 'listPets', 3, 60_000, { totalHits: 1, resetTime: new Date(NOW + 30_000) });
    expect(ourFields(info, 'listPets', 60_000, false, writer)).toEqual(fields);
    expect(ourFields(info, 'listPets', 60_000, false, writer)).toEqual(fields);
    expect(fields).toEqual([
      ['RateLimit', '"listPets"; r=2; t=30'],
      ['RateLimit-Policy', '"listPets"; q=3; w=60; pk=:ODRhOTBlNmJiODJj:'],
    ]);
  });

  it('are the same for a key met again after ten thousand others', async () => {
    const writer = new RateLimitFields(60_000);
    const first = await libraryFields('key_first:listPets', 'listPets', 3, 60_000, { totalHits: 1, resetTime: undefined });
    expect(ourFields(first.info, 'listPets', 60_000, false, writer)).toEqual(first.fields);
    for (let i = 0; i < 10_000; i++) ourFields({ ...first.info, key: `key_${i}:listPets` }, 'listPets', 60_000, false, writer);
    expect(ourFields(first.info, 'listPets', 60_000, false, writer)).toEqual(first.fields);
  });

  it('are not written once the response has been sent', () => {
    const { res, fields } = fieldsResponse();
    (res as { headersSent: boolean }).headersSent = true;
    const writer = new RateLimitFields(60_000);
    const info: RateLimitInfo = { limit: 3, used: 4, remaining: 0, resetTime: undefined, key: 'key_a:listPets' };
    writer.write(res, countOf(info), 'listPets', NOW);
    writer.writeRetryAfter(res, countOf(info), NOW);
    expect(fields).toEqual([]);
  });
});
