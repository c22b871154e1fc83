// Every alert links to its runbook in docs/operations.md, the gateway going unscraped alerts, and the overview shows the failure policies and saturation.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { anchorsOf } from '../../helpers/markdown.ts';
import { dashboardQueries } from '../../helpers/promql.ts';
import { PROJECT_ROOT } from '../../../support/start-gateway-process.ts';

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  annotations: Record<string, string>;
}

/** Where the runbooks live, as the repository's page on GitHub. */
const RUNBOOKS = 'https://github.com/petstore/gateway/blob/main/docs/operations.md';

const alerts = (
  parseYaml(readFileSync(join(PROJECT_ROOT, 'deploy/prometheus/alerts.yaml'), 'utf8')) as { groups: Array<{ rules: AlertRule[] }> }
).groups.flatMap((group) => group.rules);

describe('deploy/prometheus/alerts.yaml', () => {
  it.each(alerts.map((rule) => [rule.alert, rule.annotations.runbook_url]))('%s links to its runbook section in docs/operations.md', (alert, url) => {
    expect(url).toBe(`${RUNBOOKS}#runbook-${alert!.toLowerCase()}`);
  });

  it.each(alerts.map((rule) => [rule.alert, rule.annotations.runbook_url]))('%s: the anchor of its runbook_url exists in docs/operations.md', (_alert, url) => {
    const anchors = anchorsOf(readFileSync(join(PROJECT_ROOT, 'docs/operations.md'), 'utf8'));
    expect(anchors).toContain(new URL(url!).hash.slice(1));
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
    ['CPU used per replica', 'petstore_gateway_process_cpu_seconds_total'],
    ["the pod's CPU request", 'petstore_gateway_resource_cpu_request_cores'],
    ['event-loop delay', 'petstore_gateway_nodejs_eventloop_lag_p99_seconds'],
    ['heap in use', 'petstore_gateway_nodejs_heap_size_used_bytes'],
    ["the container's memory limit", 'petstore_gateway_resource_memory_limit_bytes'],
    ['Redis command latency', 'petstore_gateway_redis_command_duration_seconds_bucket'],
    ['Redis errors', 'petstore_gateway_redis_errors_total'],
    ['busy upstream connections', 'petstore_gateway_upstream_pool_connections'],
    ['requests queued for an upstream connection', 'petstore_gateway_upstream_pool_requests'],
    ["the TLS certificates' expiry", 'petstore_gateway_tls_certificate_expiry_timestamp_seconds'],
  ])('has a panel for %s', (_what, metric) => {
    expect(overview.filter((query) => query.expr.includes(metric)).map((query) => query.where)).toHaveLength(1);
  });
});

describe('TLS certificate expiry', () => {
  /** The threshold in days of an alert whose expression is `… - time() < N * 86400`. */
  const daysOf = (alert: string) => {
    const rule = alerts.find((candidate) => candidate.alert === alert)!;
    const match = /- time\(\) < (\d+) \* 86400$/.exec(rule.expr.trim());
    expect(match, `${alert}: ${rule.expr}`).not.toBeNull();
    return Number(match![1]);
  };

  it('tickets 14 days before a certificate ends and pages 2 days before, per environment and role', () => {
    expect(daysOf('PetstoreGatewayCertificateExpiresSoon')).toBe(14);
    expect(daysOf('PetstoreGatewayCertificateAboutToExpire')).toBe(2);
    for (const alert of ['PetstoreGatewayCertificateExpiresSoon', 'PetstoreGatewayCertificateAboutToExpire']) {
      const rule = alerts.find((candidate) => candidate.alert === alert)!;
      expect(rule.expr).toMatch(/^min by \(environment, role\) \(petstore_gateway_tls_certificate_expiry_timestamp_seconds\) - time\(\)/);
      expect(rule.annotations.summary).toContain('{{ $labels.role }}');
      expect(rule.annotations.summary).toContain('{{ $labels.environment }}');
    }
  });

  it("draws days left per environment and role, coloured at the alerts' thresholds", () => {
    const overview = JSON.parse(readFileSync(join(PROJECT_ROOT, 'grafana/dashboards/gateway-overview.json'), 'utf8')) as {
      panels: Array<{
        title: string;
        targets?: Array<{ expr: string }>;
        fieldConfig?: { defaults?: { thresholds?: { steps: Array<{ value: number | null }> } } };
      }>;
    };
    const panel = overview.panels.find((candidate) => candidate.targets?.some((target) => target.expr.includes('tls_certificate_expiry')))!;
    expect(panel.targets![0]!.expr).toMatch(/^\(min by \(environment, role\) \(.*\) - time\(\)\) \/ 86400$/);
    expect(panel.fieldConfig!.defaults!.thresholds!.steps.map((step) => step.value)).toEqual([
      null,
      daysOf('PetstoreGatewayCertificateAboutToExpire'),
      daysOf('PetstoreGatewayCertificateExpiresSoon'),
    ]);
  });
});
