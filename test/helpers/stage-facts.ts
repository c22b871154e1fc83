// The stages' facts of a request no stage has run for yet, as createRecord makes them.
import type { IncomingMessage } from 'node:http';
import { createRecord } from '../../src/pipeline/request-record.ts';
import type { TraceSlice } from '../../src/tracing/tracer.ts';
import type { StageFacts } from '../../src/tracing/request-spans.ts';

const UNTRACED: TraceSlice = {
  traceId: '00000000000000000000000000000001',
  spanId: '0000000000000001',
  upstreamParentId: '0000000000000001',
  sampled: false,
  traceState: undefined,
  spans: undefined,
};

/** A fresh record each call (a StageFacts with more beside): tests write a request's facts into it. */
export function noStageFacts(): StageFacts {
  return createRecord({ headers: {}, url: '/' } as IncomingMessage, () => UNTRACED);
}
