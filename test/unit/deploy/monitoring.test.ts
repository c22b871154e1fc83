// deploy/kubernetes/monitoring renders with plain `kubectl kustomize` the PrometheusRule and dashboard ConfigMaps that `npm run generate:monitoring` writes from the only copies of their sources, unchanged.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { IPrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import type { IConfigMap } from 'kubernetes-models/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ALERTS, DASHBOARDS, MONITORING, renderMonitoring } from '../../../scripts/generate-monitoring.ts';
import { PROJECT_ROOT } from '../../../support/start-gateway-process.ts';
import { find, kustomize, validateObject, type KubeObject } from './kustomize.ts';

const dashboardFiles = readdirSync(join(PROJECT_ROOT, DASHBOARDS))
  .filter((file) => file.endsWith('.json'))
  .sort();
const readOrNothing = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

describe('deploy/kubernetes/monitoring', () => {
  let rendered: KubeObject[] | undefined;
  const objects = () => (rendered ??= kustomize(join(PROJECT_ROOT, MONITORING)));
  const configMaps = () => objects().filter((object): object is KubeObject & IConfigMap => object.kind === 'ConfigMap');

  it.each([...renderMonitoring()])('has %s as `npm run generate:monitoring` writes it from its sources', (path, generated) => {
    expect(readOrNothing(join(PROJECT_ROOT, path)), `${path} is not what its sources give: run \`npm run generate:monitoring\` and commit the result`).toBe(
      generated,
    );
  });

  it('lists the generated files as resources, and needs no generator or plugin', () => {
    const kustomization = parseYaml(readFileSync(join(PROJECT_ROOT, MONITORING, 'kustomization.yaml'), 'utf8')) as Record<string, unknown>;
    expect(kustomization.resources).toEqual([...renderMonitoring().keys()].map((path) => basename(path)));
    for (const field of ['generators', 'transformers', 'validators']) expect(kustomization, field).not.toHaveProperty(field);
  });

  it('renders one PrometheusRule and one ConfigMap per dashboard, in the monitoring namespace', () => {
    expect(
      objects()
        .map((object) => `${object.kind}/${object.metadata.name}`)
        .sort(),
    ).toEqual([...dashboardFiles.map((file) => `ConfigMap/petstore-${file.replace(/\.json$/, '')}`), 'PrometheusRule/petstore-gateway']);
    expect(new Set(objects().map((object) => object.metadata.namespace))).toEqual(new Set(['monitoring']));
  });

  it('holds only objects valid against their schemas', () => {
    for (const object of objects()) expect(() => validateObject(object), `${object.kind} ${object.metadata.name}`).not.toThrow();
  });

  it('gives the PrometheusRule exactly the groups of deploy/prometheus/alerts.yaml', () => {
    const rule = find<IPrometheusRule>(objects(), 'PrometheusRule', 'petstore-gateway');
    const alerts = parseYaml(readFileSync(join(PROJECT_ROOT, ALERTS), 'utf8')) as { groups: unknown[] };
    expect(Object.keys(rule.spec)).toEqual(['groups']);
    expect(rule.spec.groups, `${ALERTS} changed since prometheus-rule.yaml was generated: run \`npm run generate:monitoring\``).toEqual(alerts.groups);
  });

  it.each(dashboardFiles)('holds %s byte for byte, labelled for the Grafana dashboard sidecar', (file) => {
    const configMap = find<IConfigMap>(configMaps(), 'ConfigMap', `petstore-${file.replace(/\.json$/, '')}`);
    expect(configMap.metadata!.labels).toMatchObject({ grafana_dashboard: '1' });
    expect(configMap.data, `${DASHBOARDS}/${file} changed since grafana-dashboards.yaml was generated: run \`npm run generate:monitoring\``).toEqual({
      [file]: readFileSync(join(PROJECT_ROOT, DASHBOARDS, file), 'utf8'),
    });
  });
});

describe('scripts/generate-monitoring.ts', () => {
  const work = mkdtempSync(join(tmpdir(), 'generate-monitoring-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  /** A repository in `work` with these sources; returns its root. */
  function sources(rules: string, dashboards: Record<string, string>): string {
    const root = mkdtempSync(join(work, 'root-'));
    mkdirSync(join(root, dirname(ALERTS)), { recursive: true });
    writeFileSync(join(root, ALERTS), rules);
    mkdirSync(join(root, DASHBOARDS), { recursive: true });
    for (const [file, text] of Object.entries(dashboards)) writeFileSync(join(root, DASHBOARDS, file), text);
    return root;
  }

  /** What `kubectl kustomize` renders from the files the generator writes for `root`. */
  function generateAndRender(root: string): KubeObject[] {
    const files = renderMonitoring(root);
    mkdirSync(join(root, MONITORING), { recursive: true });
    for (const [path, text] of files) writeFileSync(join(root, path), text);
    writeFileSync(join(root, MONITORING, 'kustomization.yaml'), `resources:\n${[...files.keys()].map((path) => `  - ${basename(path)}\n`).join('')}`);
    return kustomize(join(root, MONITORING));
  }

  const RULES = 'groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n';

  it('keeps every byte of a dashboard: trailing newlines or none, leading spaces, tabs, quotes, backslashes, non-ASCII', () => {
    const files: Record<string, string> = {
      'no-final-newline.json': '{"a": 1}',
      'one-final-newline.json': '{\n  "a": "x"\n}\n',
      'blank-lines-at-end.json': '{"a": 1}\n\n\n',
      'indented-first-line.json': '    {\n\t"a": "tab\\t, quote \\" and backslash \\\\",\n  "b": "héllo — ✓"\n}\n',
      'blank-lines-inside.json': '{\n\n  "a": 1\n\n}',
    };
    const data = Object.fromEntries(
      generateAndRender(sources(RULES, files))
        .filter((object): object is KubeObject & IConfigMap => object.kind === 'ConfigMap')
        .map((configMap) => Object.entries(configMap.data!)[0]!),
    );
    expect(data).toEqual(files);
  });

  it("gives a PrometheusRule the rule file's exact groups, block scalars included, kept as YAML", () => {
    const text = [
      '# a comment',
      'groups:',
      '  - name: g',
      '    rules:',
      '      - alert: A',
      '        expr: |',
      '          up',
      '',
      '            == 0',
      '        annotations:',
      '          kept: |+',
      '            text',
      '',
      '',
      '      # another comment',
      '      - record: "r:x"',
      '        expr: >-',
      '          sum(x)',
      '          by (y)',
      '',
    ].join('\n');
    const root = sources(text, { 'd.json': '{}\n' });
    const [rule] = generateAndRender(root).filter((object) => object.kind === 'PrometheusRule') as Array<KubeObject & IPrometheusRule>;
    expect(rule!.spec).toEqual(parseYaml(text));
    const written = renderMonitoring(root).get(`${MONITORING}/prometheus-rule.yaml`)!;
    expect(written).toContain('\n          expr: |\n            up\n');
    expect(written).toContain('# another comment');
  });

  it('refuses a rule file that is not one document of `groups`, and a dashboard that cannot name a ConfigMap or is no JSON', () => {
    expect(() => renderMonitoring(sources('groups: []\n---\ngroups: []\n', { 'd.json': '{}' }))).toThrow(/alerts\.yaml/);
    expect(() => renderMonitoring(sources(`${RULES}extra: 1\n`, { 'd.json': '{}' }))).toThrow(/only `groups`/);
    expect(() => renderMonitoring(sources(RULES, { 'Upper_case.json': '{}' }))).toThrow(/lower-case letters/);
    expect(() => renderMonitoring(sources(RULES, { 'd.json': '{"a": }' }))).toThrow(SyntaxError);
  });

  it('runs with Node as `npm run generate:monitoring` does, and finds the committed files up to date with --check', () => {
    expect(() =>
      execFileSync(join(PROJECT_ROOT, 'node_modules/.bin/node'), [join(PROJECT_ROOT, 'scripts/generate-monitoring.ts'), '--check'], { stdio: 'pipe' }),
    ).not.toThrow();
  });
});
