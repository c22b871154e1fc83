// Every PromQL expression in grafana/ and the alert rules parses, and names only metrics the gateway exports.
import { parser } from '@prometheus-io/lezer-promql';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/observability/metrics.ts';
import { registerTraceExportMetrics } from '../../../src/observability/trace-export-metrics.ts';
import { propagationOnly } from '../../../src/tracing/tracer.ts';
import { alertQueries, dashboardQueries, substituteGrafanaVariables, type Query } from '../../helpers/promql.ts';

async function exportedNames(): Promise<Set<string>> {
  const metrics = createMetrics({ environment: 'production', version: 't', sunsets: [] });
  metrics.readAtScrape({ inFlight: () => 0, dependencies: [], clockSkew: async () => 0 });
  // Registered beside the others by the gateway's wiring (src/wiring/compose.ts).
  registerTraceExportMetrics(metrics.registry, propagationOnly(), 'production');
  const names = new Set<string>();
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    names.add(metric.name);
    const type = String(metric.type); // prom-client declares an enum whose runtime values are these strings
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(metric.name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(metric.name + suffix);
  }
  return names;
}

/** Metric names selected by an expression, read from its syntax tree (VectorSelector identifiers). */
function selectedMetrics(expr: string): { names: string[]; errors: number } {
  const tree = parser.parse(expr);
  const names: string[] = [];
  let errors = 0;
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors++;
      if (node.name === 'VectorSelector') {
        const identifier = node.node.getChild('Identifier');
        if (identifier) names.push(expr.slice(identifier.from, identifier.to));
      }
    },
  });
  return { names, errors };
}

const queries: Query[] = [...dashboardQueries(), ...alertQueries()];

describe('PromQL in dashboards and alert rules', () => {
  it('finds the queries to check', () => {
    expect(dashboardQueries().length).toBeGreaterThanOrEqual(15);
    expect(alertQueries().length).toBe(19);
  });

  it.each(queries.map((query) => [query.where, query.expr]))('%s names only exported metrics', async (_where, expr) => {
    const exported = await exportedNames();
    const { names, errors } = selectedMetrics(substituteGrafanaVariables(expr));
    expect(errors, 'the expression does not parse').toBe(0);
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((name) => !exported.has(name))).toEqual([]);
  });

  it('would catch an unknown metric name', () => {
    const { names } = selectedMetrics('sum(rate(petstore_gateway_requets_total[5m]))');
    expect(names).toEqual(['petstore_gateway_requets_total']);
  });
});
