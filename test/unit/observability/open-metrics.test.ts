// The registry in both formats: the Prometheus text format as ever, OpenMetrics with the latency histograms' exemplars.
import { describe, expect, it } from 'vitest';
import { prefersOpenMetrics } from '../../../src/admin/admin-app.ts';
import { createMetrics } from '../../../src/observability/metrics.ts';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';

function sampledAndNot() {
  const metrics = createMetrics({ environment: 'test', version: 't', sunsets: [], operations: ['listPets'], processMetrics: false });
  metrics.requestCompleted({ operation: 'listPets', method: 'GET', statusCode: 200, durationSeconds: 0.003, upstreamSeconds: 0.002, traceId: TRACE_ID });
  metrics.requestCompleted({ operation: 'listPets', method: 'GET', statusCode: 200, durationSeconds: 0.02, upstreamSeconds: 0.015 });
  return metrics;
}

const labels = 'operation="listPets",method="GET",status_code="200",environment="test"';

describe('OpenMetrics exposition', () => {
  it("puts a sampled request's trace id on the buckets it fell in, and none on the others", async () => {
    const lines = (await sampledAndNot().openMetrics()).split('\n');
    const exemplar = new RegExp(`^(\\S+) \\d+ # \\{trace_id="${TRACE_ID}"\\} ([\\d.]+) [\\d.]+$`);
    const withExemplar = lines.flatMap((line) => {
      const match = exemplar.exec(line);
      return match ? [[match[1], Number(match[2])]] : [];
    });
    expect(withExemplar).toEqual([
      [`petstore_gateway_request_duration_seconds_bucket{le="0.005",${labels}}`, 0.003],
      ['petstore_gateway_upstream_duration_seconds_bucket{le="0.0025",operation="listPets",environment="test"}', 0.002],
      ['petstore_gateway_overhead_seconds_bucket{le="0.001",operation="listPets",environment="test"}', 0.001],
    ]);
    expect(lines.filter((line) => line.includes(' # {'))).toHaveLength(3);
    // The request that was not sampled counts all the same.
    expect(lines).toContain(`petstore_gateway_request_duration_seconds_count{${labels}} 2`);
  });

  it('names counter families without _total and their samples with it, and ends with # EOF', async () => {
    const text = await sampledAndNot().openMetrics();
    expect(text).toContain('# TYPE petstore_gateway_requests counter\n');
    expect(text).toContain(`petstore_gateway_requests_total{${labels}} 2\n`);
    expect(text.endsWith('\n# EOF\n')).toBe(true);
  });

  it('leaves the Prometheus text format as it was, before and after an OpenMetrics scrape: no exemplar, counters named as ever', async () => {
    const metrics = sampledAndNot();
    const before = await metrics.registry.metrics();
    await metrics.openMetrics();
    const after = await metrics.registry.metrics();
    expect(after).toBe(before);
    expect(after).not.toContain('# {');
    expect(after).toContain('# TYPE petstore_gateway_requests_total counter\n');
    expect(after).toContain(`petstore_gateway_requests_total{${labels}} 2\n`);
  });
});

describe('prefersOpenMetrics', () => {
  it.each([
    [undefined, false],
    ['*/*', false],
    ['text/plain', false],
    ['application/json', false],
    ['application/openmetrics-text', true],
    ['application/openmetrics-text; version=1.0.0; charset=utf-8', true],
    // What Prometheus sends by default.
    ['application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2', true],
    ['text/plain;version=0.0.4;q=1,application/openmetrics-text;q=0.5', false],
    ['application/openmetrics-text;q=0, text/plain', false],
  ])('%s: %s', (accept, expected) => {
    expect(prefersOpenMetrics(accept)).toBe(expected);
  });
});
