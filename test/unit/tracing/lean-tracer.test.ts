// The gateway's tracer: which spans it hands on, how its stages' children join their parent, and the samplers
// OTEL_TRACES_SAMPLER names against the shortcut it takes for those children (recorded and sampled as their
// sampled parent, with nothing of their own from the sampler).
import { ROOT_CONTEXT, SamplingDecision, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, type ReadableSpan, type Sampler } from '@opentelemetry/sdk-trace';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { samplerFrom } from '../../../src/tracing/from-environment.ts';
import { LeanSpan, LeanTracer } from '../../../src/tracing/lean-tracer.ts';

const resource = resourceFromAttributes({ 'service.name': 'petstore-gateway' });
const scope = { name: 'petstore-gateway', version: '1.0.0' };

function tracerWith(sampler: Sampler): { tracer: LeanTracer; ended: ReadableSpan[] } {
  const ended: ReadableSpan[] = [];
  return { tracer: new LeanTracer(resource, scope, sampler, { onEnd: (span) => ended.push(span) }, { childrenFollowParent: true }), ended };
}

const REMOTE = trace.setSpanContext(ROOT_CONTEXT, {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
  traceState: new TraceState('rojo=00f067aa0ba902b7'),
});

describe('LeanTracer', () => {
  it('hands a sampled span to the processor when it ends, once', () => {
    const { tracer, ended } = tracerWith(new AlwaysOnSampler());
    const span = tracer.startSpan('GET', { kind: SpanKind.SERVER }, ROOT_CONTEXT);
    span.end();
    span.end();
    expect(ended).toEqual([span]);
  });

  it('hands on no span of a trace its parent did not sample', () => {
    const { tracer, ended } = tracerWith(new ParentBasedSampler({ root: new AlwaysOnSampler() }));
    const unsampled = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.NONE,
      isRemote: true,
    });
    const span = tracer.startSpan('GET', { kind: SpanKind.SERVER }, unsampled);
    expect(span).not.toBeInstanceOf(LeanSpan);
    expect(span.spanContext()).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', traceFlags: TraceFlags.NONE });
    span.end();
    expect(ended).toEqual([]);
  });

  it("makes a stage's child in its parent's trace, with the parent's span id, trace state and flags", () => {
    const { tracer, ended } = tracerWith(new ParentBasedSampler({ root: new AlwaysOnSampler() }));
    const server = tracer.startSpan('GET', { kind: SpanKind.SERVER }, REMOTE) as LeanSpan;
    const child = tracer.startChild(server, 'rate_limit', SpanKind.INTERNAL);
    const grandchild = tracer.startChild(child as LeanSpan, 'redis', SpanKind.CLIENT, { 'db.system.name': 'redis' });
    grandchild.end();
    child.end();
    server.end();
    const [redis, rateLimit, request] = ended as LeanSpan[];
    expect(request!.parentSpanContext).toMatchObject({ spanId: 'b7ad6b7169203331', isRemote: true });
    expect(rateLimit!.spanContext()).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', traceFlags: TraceFlags.SAMPLED });
    expect(rateLimit!.spanContext().traceState?.serialize()).toBe('rojo=00f067aa0ba902b7');
    expect(rateLimit!.parentSpanContext?.spanId).toBe(request!.spanContext().spanId);
    expect(redis!.parentSpanContext?.spanId).toBe(rateLimit!.spanContext().spanId);
    expect(redis!.attributes).toEqual({ 'db.system.name': 'redis' });
    expect(new Set(ended.map((span) => span.spanContext().spanId)).size).toBe(3);
  });

  it('asks the sampler for a child when it was not told that children follow their parent', () => {
    const ended: ReadableSpan[] = [];
    let asked = 0;
    const counting: Sampler = {
      shouldSample: () => {
        asked++;
        return { decision: SamplingDecision.RECORD_AND_SAMPLED };
      },
      toString: () => 'counting',
    };
    const tracer = new LeanTracer(resource, scope, counting, { onEnd: (span) => ended.push(span) });
    const server = tracer.startSpan('GET', {}, ROOT_CONTEXT) as LeanSpan;
    tracer.startChild(server, 'authenticate', SpanKind.INTERNAL).end();
    expect(asked).toBe(2);
    expect(ended[0]!.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
  });

  it('records nothing under always_off', () => {
    const { tracer, ended } = tracerWith(new AlwaysOffSampler());
    tracer.startSpan('GET', {}, ROOT_CONTEXT).end();
    expect(ended).toEqual([]);
  });
});

const SAMPLERS = [
  { OTEL_TRACES_SAMPLER: 'always_on' },
  { OTEL_TRACES_SAMPLER: 'always_off' },
  { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' },
  { OTEL_TRACES_SAMPLER: 'parentbased_always_on' },
  { OTEL_TRACES_SAMPLER: 'parentbased_always_off' },
  { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' },
];

const traceId = fc.stringMatching(/^[0-9a-f]{32}$/).filter((id) => !/^0+$/.test(id));

describe('the children of a sampled gateway span', () => {
  for (const env of SAMPLERS)
    it(`are recorded and sampled, with no attributes or trace state of the sampler's, under ${env.OTEL_TRACES_SAMPLER}`, () => {
      const { sampler } = samplerFrom(env);
      let sampledServers = 0;
      fc.assert(
        fc.property(traceId, fc.boolean(), (id, remoteParentSampled) => {
          // The SERVER span: a root, or the child of a remote parent.
          const remote = trace.setSpanContext(ROOT_CONTEXT, {
            traceId: id,
            spanId: 'b7ad6b7169203331',
            traceFlags: remoteParentSampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
            isRemote: true,
          });
          for (const parentOfServer of [ROOT_CONTEXT, remote]) {
            const server = sampler.shouldSample(parentOfServer, id, 'GET', SpanKind.SERVER, {}, []);
            if (server.decision !== SamplingDecision.RECORD_AND_SAMPLED) continue;
            sampledServers++;
            const local = trace.setSpanContext(ROOT_CONTEXT, { traceId: id, spanId: '00f067aa0ba902b7', traceFlags: TraceFlags.SAMPLED });
            expect(sampler.shouldSample(local, id, 'rate_limit', SpanKind.INTERNAL, {}, [])).toEqual({ decision: SamplingDecision.RECORD_AND_SAMPLED });
          }
        }),
        { numRuns: 200 },
      );
      // always_off samples no SERVER span, so it makes no child to take the shortcut for; every other has some.
      expect(sampledServers > 0).toBe(env.OTEL_TRACES_SAMPLER !== 'always_off');
    });
});
