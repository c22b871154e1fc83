// W3C trace context as the gateway reads and states it, row by row.
import { describe, expect, it } from 'vitest';
import { boundedBaggage, formatTraceParent, remoteParent } from '../../../src/http/trace-context.ts';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SPAN_ID = 'b7ad6b7169203331';

describe('remoteParent', () => {
  it.each([
    [`00-${TRACE_ID}-${SPAN_ID}-01`, { traceId: TRACE_ID, spanId: SPAN_ID, sampled: true }],
    [`00-${TRACE_ID}-${SPAN_ID}-00`, { traceId: TRACE_ID, spanId: SPAN_ID, sampled: false }],
    [`00-${TRACE_ID}-${SPAN_ID}-03`, { traceId: TRACE_ID, spanId: SPAN_ID, sampled: true }],
    // A later version may add fields: read as version 00 (the specification's rule).
    [`01-${TRACE_ID}-${SPAN_ID}-01-more`, { traceId: TRACE_ID, spanId: SPAN_ID, sampled: true }],
  ])('continues %s', (traceparent, expected) => {
    expect(remoteParent({ traceparent })).toEqual({ ...expected, traceState: undefined });
  });

  it.each([
    `00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01`,
    `00-${'0'.repeat(32)}-${SPAN_ID}-01`,
    `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
    `ff-${TRACE_ID}-${SPAN_ID}-01`,
    `00-${TRACE_ID}-${SPAN_ID}-01-more`,
    `00-${TRACE_ID}-${SPAN_ID}`,
    `00-${TRACE_ID}-${SPAN_ID}-01, 00-${TRACE_ID}-${SPAN_ID}-01`,
    '',
  ])('refuses %j', (traceparent) => {
    expect(remoteParent({ traceparent, tracestate: 'a=1' })).toBeUndefined();
  });

  it.each([
    ['congo=t61rcWkgMzE,rojo=00f067aa0ba902b7', 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7'],
    ['tenant@vendor=x', 'tenant@vendor=x'],
    ['a=1 , b=2', 'a=1,b=2'],
    ['a=1,a=2', 'a=2'],
    ['Bad=1,b=2', 'b=2'],
    ['nothing-valid', undefined],
    ['', undefined],
  ])('checks tracestate %j', (tracestate, expected) => {
    expect(remoteParent({ traceparent: `00-${TRACE_ID}-${SPAN_ID}-01`, tracestate })?.traceState).toBe(expected);
  });
});

describe('formatTraceParent', () => {
  it('writes version 00 with the sampled flag', () => {
    expect(formatTraceParent(TRACE_ID, SPAN_ID, true)).toBe(`00-${TRACE_ID}-${SPAN_ID}-01`);
    expect(formatTraceParent(TRACE_ID, SPAN_ID, false)).toBe(`00-${TRACE_ID}-${SPAN_ID}-00`);
  });
});

describe('boundedBaggage', () => {
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['tenant=a,region=eu', 'tenant=a,region=eu'],
    [['tenant=a', 'region=eu'], 'tenant=a,region=eu'],
  ])('passes %j on', (header, expected) => {
    expect(boundedBaggage(header)).toBe(expected);
  });

  it('keeps the first 64 members', () => {
    const members = Array.from({ length: 65 }, (_, index) => `k${index}=v`);
    expect(boundedBaggage(members.join(','))).toBe(members.slice(0, 64).join(','));
  });

  it('keeps whole members within 8192 bytes, never part of one', () => {
    const members = [`a=${'x'.repeat(5000)}`, `b=${'y'.repeat(5000)}`];
    expect(boundedBaggage(members.join(','))).toBe(members[0]);
    expect(boundedBaggage(`a=${'x'.repeat(9000)}`)).toBeUndefined();
  });
});
