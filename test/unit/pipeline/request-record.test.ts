// The status a finished request is counted and logged with, row by row.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { completedStatus, createRecord, type RequestRecord } from '../../../src/pipeline/request-record.ts';

const spanId = 'b7ad6b7169203331';
const trace = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId, upstreamParentId: spanId, sampled: false, traceState: undefined, spans: undefined };
const record = (upstream?: RequestRecord['upstream']): RequestRecord => {
  const made = createRecord({ headers: {}, url: '/v1/pets' } as unknown as IncomingMessage, () => trace);
  if (upstream) made.upstream = upstream;
  return made;
};
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
