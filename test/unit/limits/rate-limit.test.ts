// createRateLimit: what a request gets, and what is reported, when the store counts or cannot.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { describe, expect, it } from 'vitest';
import type { Operation } from '../../../src/contract/operations.ts';
import { GatewayError } from '../../../src/errors/gateway-error.ts';
import type { IncomingMessage } from 'node:http';
import { createRecord } from '../../../src/pipeline/request-record.ts';
import type { LimitPolicy, LimitReading, LimitStore } from '../../../src/limits/limit-store.ts';
import { createRateLimit, type RateLimitOptions } from '../../../src/limits/rate-limit.ts';
import { RateLimitStoreUnavailableError } from '../../../src/limits/rate-limit-store-failure.ts';
import { fixedClock } from '../../../src/time/clock.ts';

const NOW = Date.parse('2030-01-01T00:00:00Z');

/** A limit store counting one window in memory until it is told to fail; it keeps what it was asked. */
class FakeStore implements LimitStore {
  readonly countsInRedis = false;
  readonly asked: Array<[string, LimitPolicy]> = [];
  hits = 0;
  failure: Error | undefined;

  count(key: string, policy: LimitPolicy): Promise<LimitReading> {
    this.asked.push([key, policy]);
    if (this.failure) return Promise.reject(this.failure);
    this.hits++;
    return Promise.resolve({ at: NOW, hits: this.hits, windowEndsAt: NOW + 60_000, quota: undefined });
  }
}

const storeDown = () => new RateLimitStoreUnavailableError('Redis could not count the rate-limit hits', { cause: new Error('connect ECONNREFUSED') });

/** A limiter over `store`, with what it reports kept. */
function limiterOver(store: LimitStore, options: Partial<RateLimitOptions> = {}) {
  const reported = { unavailable: [] as RateLimitStoreUnavailableError[], passed: 0 };
  const limiter = createRateLimit({
    windowMs: 60_000,
    limits: { default: 3 },
    store,
    onStoreError: 'allow',
    clock: fixedClock(NOW),
    onStoreUnavailable: (failure) => reported.unavailable.push(failure),
    onPassedUnlimited: () => reported.passed++,
    ...options,
  });
  return { limiter, reported };
}

/** The record of an authenticated listPets request, as the stages before the limiter leave it. */
function authenticatedRecord() {
  const arriving = { headers: { 'x-request-id': 'req-0001' }, url: '/v1/pets' } as unknown as IncomingMessage;
  const spanId = 'b7ad6b7169203331';
  const trace = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId, upstreamParentId: spanId, sampled: false, traceState: undefined, spans: undefined };
  const record = createRecord(arriving, () => trace);
  record.caller = { keyId: 'key_a', name: 'acme' };
  record.route = { operation: { id: 'listPets' } as Operation, pathParams: {} };
  return record;
}

/** One authenticated listPets request through `limiter`: what reached `next`, and the response fields it set. */
function run(limiter: RequestHandler, record = authenticatedRecord()): Promise<{ next: unknown; fields: Record<string, string> }> {
  const fields: Record<string, string> = {};
  const res = {
    locals: { gateway: record },
    headersSent: false,
    setHeader(name: string, value: string) {
      fields[name.toLowerCase()] = value;
      return res;
    },
    append(name: string, value: string) {
      fields[name.toLowerCase()] = value;
      return res;
    },
  };
  return new Promise((resolve) => {
    void limiter({} as Request, res as unknown as Response, ((error?: unknown) => resolve({ next: error, fields })) as NextFunction);
  });
}

describe('a store that cannot count, with onStoreError allow', () => {
  it('lets the request go on, with no RateLimit field', async () => {
    const store = new FakeStore();
    store.failure = storeDown();
    expect(await run(limiterOver(store).limiter)).toEqual({ next: undefined, fields: {} });
  });

  it('reports the store failure and the request let through, once each', async () => {
    const store = new FakeStore();
    const failure = storeDown();
    store.failure = failure;
    const { limiter, reported } = limiterOver(store);
    await run(limiter);
    expect(reported).toEqual({ unavailable: [failure], passed: 1 });
  });
});

describe('a store that cannot count, with onStoreError deny', () => {
  it('refuses with the 503 Error and Retry-After, and no RateLimit field', async () => {
    const store = new FakeStore();
    store.failure = storeDown();
    const { next, fields } = await run(limiterOver(store, { onStoreError: 'deny' }).limiter);
    expect(next).toBeInstanceOf(GatewayError);
    const refusal = next as GatewayError;
    expect({ status: refusal.status, headers: refusal.headers, body: refusal.toBody(), fields }).toEqual({
      status: 503,
      headers: { 'Retry-After': '1' },
      body: { code: 'service_unavailable', message: 'Rate limits cannot be checked right now; retry shortly', status: 503 },
      fields: {},
    });
  });

  it("keeps the store failure as the refusal's cause", async () => {
    const store = new FakeStore();
    const failure = storeDown();
    store.failure = failure;
    const { next } = await run(limiterOver(store, { onStoreError: 'deny' }).limiter);
    expect((next as GatewayError).cause).toBe(failure);
  });

  it('reports the store failure, and no request let through', async () => {
    const store = new FakeStore();
    const failure = storeDown();
    store.failure = failure;
    const { limiter, reported } = limiterOver(store, { onStoreError: 'deny' });
    await run(limiter);
    expect(reported).toEqual({ unavailable: [failure], passed: 0 });
  });
});

describe('a store that counts', () => {
  it('lets the request go on, telling its quota', async () => {
    expect(await run(limiterOver(new FakeStore()).limiter)).toEqual({
      next: undefined,
      fields: { 'ratelimit-policy': expect.stringMatching(/^"listPets"; q=3; w=60; pk=:/), ratelimit: '"listPets"; r=2; t=60' },
    });
  });

  it('reports no store failure and no request let through', async () => {
    const { limiter, reported } = limiterOver(new FakeStore());
    await run(limiter);
    expect(reported).toEqual({ unavailable: [], passed: 0 });
  });
});

describe("the decision, on the request's record", () => {
  it('is allowed, then limited past the limit, timed', async () => {
    const { limiter } = limiterOver(new FakeStore());
    const records = [authenticatedRecord(), authenticatedRecord(), authenticatedRecord(), authenticatedRecord()];
    for (const record of records) await run(limiter, record);
    expect(records.map((record) => record.rateLimitOutcome)).toEqual(['allowed', 'allowed', 'allowed', 'limited']);
    for (const record of records) {
      expect(record.rateLimitStartMs).toBeGreaterThan(0);
      expect(record.rateLimitEndMs).toBeGreaterThanOrEqual(record.rateLimitStartMs);
      expect(record).toMatchObject({ rateLimitWaitedForRedis: false, rateLimitStoreError: undefined, onStoreError: undefined });
    }
  });

  it("names the store's error and what the policy did when the store could not count", async () => {
    const store = new FakeStore();
    store.failure = storeDown();
    const record = authenticatedRecord();
    await run(limiterOver(store, { onStoreError: 'deny' }).limiter, record);
    expect(record).toMatchObject({ rateLimitOutcome: 'store_unavailable', rateLimitStoreError: 'RateLimitStoreUnavailableError', onStoreError: 'deny' });
  });
});

describe('anything else a store throws', () => {
  it('is passed on as it is (a gateway bug, answered 500), even with onStoreError allow, and reported as neither', async () => {
    const store = new FakeStore();
    const bug = new TypeError('Cannot read properties of undefined');
    store.failure = bug;
    const { limiter, reported } = limiterOver(store);
    expect(await run(limiter)).toEqual({ next: bug, fields: {} });
    expect(reported).toEqual({ unavailable: [], passed: 0 });
  });
});

describe('the store, asked', () => {
  it("once per request, with the key id and operation as its key and the request's whole policy", async () => {
    const store = new FakeStore();
    const record = authenticatedRecord();
    record.caller = { keyId: 'key_a', name: 'acme', rateLimitPerMinute: 30, quotaPerDay: 5, quotaPerMonth: 50 };
    await run(limiterOver(store).limiter, record);
    expect(store.asked).toEqual([['key_a:listPets', { keyId: 'key_a', windowMs: 60_000, perWindow: 30, perDay: 5, perMonth: 50 }]]);
  });

  it("with the same policy object while the caller's limits stay", async () => {
    const store = new FakeStore();
    const { limiter } = limiterOver(store);
    const first = authenticatedRecord();
    await run(limiter, first);
    const second = authenticatedRecord();
    second.caller = first.caller!;
    await run(limiter, second);
    expect(store.asked[1]![1]).toBe(store.asked[0]![1]);
  });
});
