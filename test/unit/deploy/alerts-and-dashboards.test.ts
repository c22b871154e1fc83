// Every alert links to its runbook in README.md, the gateway going unscraped alerts, and the overview shows the failure policies.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { dashboardQueries } from '../../helpers/promql.ts';
import { PROJECT_ROOT } from '../../helpers/start-gateway-process.ts';

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  annotations: Record<string, string>;
}

const RUNBOOKS = 'https://github.com/petstore/gateway/blob/main/README.md#';

const alerts = (parseYaml(readFileSync(join(PROJECT_ROOT, 'deploy/prometheus/alerts.yaml'), 'utf8')) as { groups: Array<{ rules: AlertRule[] }> }).groups.flatMap(
  (group) => group.rules,
);

/** The anchors GitHub gives README.md's headings: lower case, punctuation dropped, spaces to hyphens. */
function readmeAnchors(): Set<string> {
  const readme = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
  const headings = [...readme.matchAll(/^#{1,6} (.+)$/gm)].map((match) => match[1]!);
  return new Set(headings.map((heading) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, '').replaceAll(' ', '-')));
}

describe('deploy/prometheus/alerts.yaml', () => {
  it.each(alerts.map((rule) => [rule.alert, rule.annotations.runbook_url]))('%s links to its runbook section in README.md', (alert, url) => {
    expect(url).toBe(`${RUNBOOKS}runbook-${alert!.toLowerCase()}`);
    expect(readmeAnchors()).toContain(url!.slice(RUNBOOKS.length));
  });

  it('alerts when no gateway series is scraped at all, after a while', () => {
    const rule = alerts.find((candidate) => /^absent\(petstore_gateway_\w+\)$/.test(candidate.expr.trim()));
    expect(rule).toMatchObject({ alert: 'PetstoreGatewayMetricsAbsent', for: '5m' });
  });
});

describe('grafana/dashboards/gateway-overview.json', () => {
  const overview = dashboardQueries().filter((query) => query.where.startsWith('gateway-overview.json: '));
  it.each([
    ['load shedding', 'petstore_gateway_shed_requests_total'],
    ['the circuit breaker state', 'petstore_gateway_upstream_circuit_open'],
    ['rate-limit store failures', 'petstore_gateway_rate_limit_store_errors_total'],
    ['requests let through unchecked', 'petstore_gateway_rate_limit_passed_total'],
  ])('has a panel for %s', (_what, metric) => {
    expect(overview.filter((query) => query.expr.includes(metric)).map((query) => query.where)).toHaveLength(1);
  });
});
