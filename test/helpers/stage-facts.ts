// The stages' facts of a request no stage has run for yet, as createRecord makes them.
import type { IncomingMessage } from 'node:http';
import { createRecord } from '../../src/pipeline/request-record.ts';
import type { TraceSlice } from '../../src/tracing/tracer.ts';
import type { StageFacts } from '../../src/tracing/request-spans.ts';

const UNTRACED: TraceSlice = { traceId: '0'.repeat(31) + '1', spanId: '0'.repeat(15) + '1', upstreamParentId: '0'.repeat(15) + '1', sampled: false, traceState: undefined, spans: undefined };

/** A fresh record each call (a StageFacts with more beside): tests write a request's facts into it. */
export function noStageFacts(): StageFacts {
  return createRecord({ headers: {}, url: '/' } as IncomingMessage, () => UNTRACED);
}
