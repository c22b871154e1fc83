// Every PromQL expression the operators' tooling runs: dashboard panel queries and alert rules.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { PROJECT_ROOT } from '../../support/start-gateway-process.ts';

export interface Query {
  where: string;
  expr: string;
  /** A dashboard panel's unit (`percentunit` for a ratio panel); absent for alert rules. */
  unit?: string;
  /** The panel asks for this query's exemplars (its dots link to traces). */
  exemplar?: boolean;
}

interface Panel {
  title: string;
  targets?: Array<{ expr?: string; exemplar?: boolean }>;
  panels?: Panel[];
  fieldConfig?: { defaults?: { unit?: string } };
}

/** Grafana variables replaced by what Grafana would send, so the text is plain PromQL. */
export function substituteGrafanaVariables(expr: string, environment = '.*'): string {
  return expr.replaceAll('$__rate_interval', '1m').replaceAll('$__range', '1h').replaceAll('$environment', environment);
}

export function dashboardQueries(): Query[] {
  const dir = join(PROJECT_ROOT, 'grafana/dashboards');
  const queries: Query[] = [];
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.json'))) {
    const dashboard = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
      panels: Panel[];
      templating: { list: Array<{ name: string; definition?: string }> };
    };
    const visit = (panel: Panel) => {
      const unit = panel.fieldConfig?.defaults?.unit;
      for (const target of panel.targets ?? [])
        if (target.expr)
          queries.push({ where: `${file}: ${panel.title}`, expr: target.expr, ...(unit ? { unit } : {}), ...(target.exemplar ? { exemplar: true } : {}) });
      for (const inner of panel.panels ?? []) visit(inner);
    };
    dashboard.panels.forEach(visit);
    for (const variable of dashboard.templating.list) {
      const match = /^label_values\((\w+),/.exec(variable.definition ?? '');
      if (match) queries.push({ where: `${file}: variable ${variable.name}`, expr: match[1]! });
    }
  }
  return queries;
}

export function alertQueries(): Query[] {
  const rules = parseYaml(readFileSync(join(PROJECT_ROOT, 'deploy/prometheus/alerts.yaml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert?: string; record?: string; expr: string }> }>;
  };
  return rules.groups.flatMap((group) => group.rules.map((rule) => ({ where: `alert ${rule.alert ?? rule.record}`, expr: rule.expr })));
}
