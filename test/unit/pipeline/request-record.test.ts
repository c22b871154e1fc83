// The status a finished request is counted and logged with, row by row.
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { completedStatus, type RequestRecord } from '../../../src/pipeline/request-record.ts';

const record = (upstream?: RequestRecord['upstream']): RequestRecord => ({
  requestId: 'r',
  startedAt: 0n,
  path: '/v1/pets',
  query: '',
  trace: { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', sampled: false, traceState: undefined, spans: undefined },
  ...(upstream ? { upstream } : {}),
});
const response = (writableFinished: boolean, statusCode: number) => ({ writableFinished, statusCode }) as ServerResponse;

describe('completedStatus', () => {
  it.each([
    ['the status sent, when the response was written whole', response(true, 200), record(), 200],
    ['a refusal sent whole', response(true, 503), record(), 503],
    ['an upstream answer relayed whole, even one that failed late', response(true, 200), record({ status: 200, failure: 'idle_timeout' }), 200],
    ['502 when the gateway cut the answer because the upstream failed mid-way', response(false, 200), record({ status: 200, failure: 'reset' }), 502],
    ['499 when the client went away first', response(false, 200), record({ status: 200 }), 499],
    ['499 when the client went away before any upstream exchange', response(false, 200), record(), 499],
  ])('is %s', (_case, res, rec, status) => {
    expect(completedStatus(res, rec)).toBe(status);
  });
});
